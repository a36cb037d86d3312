#pragma once
// Outputs are written to a temporary file beside the target and renamed over it, so a
// reader never sees a half-written file (DESIGN.md conventions).
#include <cstddef>
#include <string>

namespace cnnpar::real {

/** Writes `bytes` bytes to `path` atomically. @throws InputError (path, "/", reason) when the
 *  file cannot be written (missing directory, no permission, disk full). */
void write_file_atomically(const std::string& path, const void* data, std::size_t bytes);
inline void write_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, text.data(), text.size());
}

/** Removes the temporary file of a write_file_atomically in progress, if any. Async-signal-
 *  safe: for SIGINT/SIGTERM handlers, so an interrupted write leaves nothing behind. */
void remove_pending_temporary() noexcept;

}  // namespace cnnpar::real
