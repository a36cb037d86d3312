#include "real/atomic_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <unistd.h>

#include "model/error.hpp"

namespace cnnpar::real {

void write_file_atomically(const std::string& path, const void* data, std::size_t bytes) {
  const std::string temporary = path + ".tmp." + std::to_string(::getpid());
  std::FILE* file = std::fopen(temporary.c_str(), "wb");
  if (!file) throw InputError(path, "/", path, std::string("cannot write output: ") + std::strerror(errno));
  const bool written = std::fwrite(data, 1, bytes, file) == bytes;
  const int saved_errno = errno;
  const bool closed = std::fclose(file) == 0;
  if (!written || !closed) {
    std::remove(temporary.c_str());
    throw InputError(path, "/", path, std::string("cannot write output: ") + std::strerror(written ? errno : saved_errno));
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const int rename_errno = errno;
    std::remove(temporary.c_str());
    throw InputError(path, "/", path, std::string("cannot rename output into place: ") + std::strerror(rename_errno));
  }
}

}  // namespace cnnpar::real
