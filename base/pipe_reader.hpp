#pragma once
// Reading the pipes of child processes: all of them at once, so a child that fills one pipe
// while this process waits on another cannot deadlock.
#include <functional>
#include <string>
#include <vector>

namespace cnnpar {

class PipeReader {
 public:
  PipeReader() = default;
  PipeReader(const PipeReader&) = delete;
  PipeReader& operator=(const PipeReader&) = delete;
  /** Closes the pipes still open. */
  ~PipeReader();

  /** Reads `fd` (this reader closes it) into `sink` until its writer closes it; then calls
   *  `closed`. */
  void add(int fd, std::string* sink, std::function<void()> closed = {});
  /** Waits until some pipe has data or has closed, takes what there is; false once none is open.
   *  @throws std::runtime_error if poll fails for another reason than a signal. */
  bool read_some();
  std::size_t open_pipes() const { return pipes_.size(); }

 private:
  struct Pipe {
    int fd;
    std::string* sink;
    std::function<void()> closed;
  };
  std::vector<Pipe> pipes_;
};

}  // namespace cnnpar
