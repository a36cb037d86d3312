#pragma once
// Output files: checked before any work, written atomically, committed all-or-nothing
// (never a half-written file, never a stale mix of old and new).
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace cnnpar {

/** One CSV field, quoted as RFC 4180 says when it holds a comma, a quote or a line break
 *  (its quotes doubled). Every CSV cnnpar writes quotes its text fields with this. */
std::string csv_field(const std::string& text);

/** True for "-" (standard output) and for an existing path that is neither a regular file nor
 *  a folder (a device, a FIFO, /dev/stdout): such outputs are written as they are, never
 *  staged and renamed, which would replace the device by a regular file. */
bool is_stream_output(const std::string& path);

/** Writes `bytes` bytes to a temporary file beside `path` (".NAME.PID.tmp") and renames it
 *  into place, so no reader ever sees a half-written file.
 *  @throws std::runtime_error "cannot write PATH: REASON" (full disk, vanished folder). */
void write_file_atomic(const std::string& path, const void* data, std::size_t bytes);
void write_file_atomic(const std::string& path, const std::string& content);

/** Now in UTC to the second, ISO 8601 ("2026-11-25T20:33:13Z"): the time outputs record in
 *  their provenance (a calibration's or a fit's source, a report's environment). */
std::string utc_timestamp();

/** Removes the temporary file of a write_file_atomic in progress, if any. Async-signal-safe:
 *  for SIGINT/SIGTERM handlers, so an interrupted write leaves nothing behind. */
void remove_pending_temporary() noexcept;

/** Checks, before any work, that `path` can be written as a file: its folder exists and
 *  accepts a new file (probed by creating and removing one), and `path` is not a folder.
 *  Empty paths are skipped. @throws InputError(origin, option, path, reason). */
void check_output_path(const std::string& path, const std::string& option,
                       const std::string& origin = "command line");

/** Checks that `dir` can be replaced by a folder of outputs: its parent exists and accepts
 *  new entries, and `dir` is absent or a folder. @throws InputError(origin, option, dir, reason). */
void check_output_folder(const std::string& dir, const std::string& option,
                         const std::string& origin = "command line");

/** One command's outputs, all-or-nothing: everything is staged beside its target first (a
 *  full disk fails there, before anything is replaced), then commit() renames it all into
 *  place. Whatever is staged but not committed is removed by the destructor, so an error or
 *  an interruption leaves the earlier outputs as they were. */
class OutputTransaction {
 public:
  OutputTransaction() = default;
  OutputTransaction(const OutputTransaction&) = delete;
  OutputTransaction& operator=(const OutputTransaction&) = delete;
  ~OutputTransaction();

  /** Stages `content` for the file `path`. @throws std::runtime_error naming `path`. */
  void file(const std::string& path, const std::string& content);
  /** Stages a folder that replaces `dir` whole (no stale files of an earlier run stay);
   *  returns the staging folder to fill. @throws std::runtime_error naming `dir`. */
  std::string folder(const std::string& dir);
  /** Renames every staged file and folder into place. @throws std::runtime_error. */
  void commit();

 private:
  struct Staged {
    std::string temporary;
    std::string target;
    bool is_folder = false;
  };
  std::vector<Staged> staged_;
  std::vector<std::pair<std::string, std::string>> streams_;  ///< (path, content) of stream outputs
};

}  // namespace cnnpar
