// Exit status of an error and the ranks' agreement on a set-up failure (the lowest failing
// rank prints its message).
#include "apps/cnnpar-run/failure.hpp"

#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "base/error.hpp"
#include "real/mpi_wrap.hpp"

namespace cnnpar::executor {

using namespace cnnpar::real;

int status_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const InputError&) {
    return 2;
  } catch (...) {
    return 1;
  }
}

namespace {

std::string message_of(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "unknown error";
  }
}

}  // namespace

int agree_on_failure(const std::exception_ptr& error, int rank, int size, double timeout_s) {
  int local[2] = {error ? rank : size, error ? status_of(error) : 0};
  int first_failed = size, status = 0;
  mpi::allreduce(&local[0], &first_failed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, timeout_s, "set-up agreement");
  mpi::allreduce(&local[1], &status, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, timeout_s, "set-up agreement");
  if (error && rank == first_failed) fmt::print(stderr, "cnnpar-run: {}\n", message_of(error));
  return status;
}

}  // namespace cnnpar::executor
