// close_every_copy (base/file_descriptors.hpp): a rank leaving without MPI_Finalize ends its
// output pipes this way, which Hydra's launcher left open twice.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>

#include <catch2/catch.hpp>

#include "base/file_descriptors.hpp"

using namespace cnnpar;

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF; }

/** A pipe's reader sees its end (POLLHUP, read() == 0) once every write end is closed, and
 *  not before: POSIX pipe semantics, independent of the code under test. */
bool reader_sees_end(int read_fd) {
  pollfd p{.fd = read_fd, .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, 0) != 1 || (p.revents & POLLHUP) == 0) return false;
  char byte = 0;
  return ::read(read_fd, &byte, 1) == 0;
}

}  // namespace

TEST_CASE("close_every_copy ends a pipe whose write end is open several times", "[descriptors]") {
  int ends[2], other[2];
  REQUIRE(::pipe(ends) == 0);
  REQUIRE(::pipe(other) == 0);
  const int copy_a = ::dup(ends[1]), copy_b = ::dup(ends[1]);  // a rank under Hydra holds its stdout pipe twice
  REQUIRE((copy_a >= 0 && copy_b >= 0));

  ::close(copy_b);  // closing one copy leaves the pipe open: what this function is for
  const int copy_c = ::dup(ends[1]);
  REQUIRE(copy_c >= 0);
  CHECK_FALSE(reader_sees_end(ends[0]));

  close_every_copy(ends[1]);
  CHECK_FALSE(is_open(ends[1]));
  CHECK_FALSE(is_open(copy_a));
  CHECK_FALSE(is_open(copy_c));
  CHECK(reader_sees_end(ends[0]));
  // The pipe's read end shares its inode but not its access; the other pipe is another file.
  CHECK(is_open(ends[0]));
  CHECK(is_open(other[1]));
  CHECK_FALSE(reader_sees_end(other[0]));
  for (int fd : {ends[0], other[0], other[1]}) ::close(fd);
}

TEST_CASE("close_every_copy closes a descriptor without copies and leaves the others", "[descriptors]") {
  int ends[2];
  REQUIRE(::pipe(ends) == 0);
  const int file = ::open("/dev/null", O_WRONLY);
  REQUIRE(file >= 0);
  close_every_copy(file);
  CHECK_FALSE(is_open(file));
  CHECK(is_open(ends[0]));
  CHECK(is_open(ends[1]));
  ::close(ends[0]);
  ::close(ends[1]);
}
