#include "base/pipe_reader.hpp"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace cnnpar {

PipeReader::~PipeReader() {
  for (const Pipe& pipe : pipes_) ::close(pipe.fd);
}

void PipeReader::add(int fd, std::string* sink, std::function<void()> closed) {
  pipes_.push_back(Pipe{fd, sink, std::move(closed)});
}

bool PipeReader::read_some() {
  if (pipes_.empty()) return false;
  std::vector<pollfd> fds;
  for (const Pipe& pipe : pipes_) fds.push_back(pollfd{pipe.fd, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), -1) < 0) {
    if (errno == EINTR) return true;
    throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
  }
  char buffer[65536];
  // Backwards, so that erasing a closed pipe keeps the indices of those still to look at.
  for (std::size_t k = fds.size(); k-- > 0;) {
    if (fds[k].revents == 0) continue;
    const ssize_t got = ::read(fds[k].fd, buffer, sizeof buffer);
    if (got > 0) {
      pipes_[k].sink->append(buffer, std::size_t(got));
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    ::close(pipes_[k].fd);
    std::function<void()> closed = std::move(pipes_[k].closed);
    pipes_.erase(pipes_.begin() + std::ptrdiff_t(k));
    if (closed) closed();
  }
  return !pipes_.empty();
}

}  // namespace cnnpar
