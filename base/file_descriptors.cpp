#include "base/file_descriptors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

namespace cnnpar {

namespace {

/** The descriptors open in this process; empty without /proc. */
std::vector<int> open_descriptors() {
  std::vector<int> descriptors;
  std::error_code error;  // never thrown: a caller may be on its way out
  for (auto it = std::filesystem::directory_iterator("/proc/self/fd", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    int fd = -1;
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec == std::errc{}) descriptors.push_back(fd);
  }
  return descriptors;  // includes the listing's own descriptor, now closed: it matches no file
}

}  // namespace

void close_every_copy(int fd) {
  struct stat target {};
  const int access = ::fcntl(fd, F_GETFL);
  if (::fstat(fd, &target) == 0 && access != -1)
    for (const int other : open_descriptors()) {
      struct stat candidate {};
      if (other != fd && ::fstat(other, &candidate) == 0 && candidate.st_dev == target.st_dev &&
          candidate.st_ino == target.st_ino && (::fcntl(other, F_GETFL) & O_ACCMODE) == (access & O_ACCMODE))
        ::close(other);  // same access: a pipe's two ends share one inode
    }
  ::close(fd);
}

}  // namespace cnnpar
