#pragma once
// Calls of this program's own functions in forked children, for libraries whose state cannot be
// reset within a process (SimGrid's engine): each call writes its result to a pipe, and at most
// a given number run at once.
#include <cstddef>
#include <functional>
#include <string>

namespace cnnpar {

/** What a forked call sent back. */
struct ForkedCall {
  std::size_t index = 0;
  std::string bytes;    ///< what it wrote to its pipe
  int wait_status = 0;  ///< as waitpid reports it (WIFEXITED, WIFSIGNALED, ...)
};

/** Runs `call(index, fd)` for index 0..count-1, each in a forked child, at most `width` at
 *  once. `call` writes its result to `fd` and returns the child's exit status; the child then
 *  ends with _exit (this process's atexit handlers and static destructors are not run twice).
 *  `ended` is called here, one call at a time, as each child ends; no child starts once `stop`
 *  returns true. Standard output is flushed before each fork, or it would be written twice.
 *  @throws std::runtime_error if pipe or fork fails (the children started are waited for). */
void run_forked_calls(std::size_t count, int width, const std::function<int(std::size_t index, int fd)>& call,
                      const std::function<void(ForkedCall&& call)>& ended, const std::function<bool()>& stop = {});

}  // namespace cnnpar
