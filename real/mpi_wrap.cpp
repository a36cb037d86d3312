#include "real/mpi_wrap.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

#include <fmt/format.h>

namespace cnnpar::real::mpi {

std::string error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, std::size_t(length));
}

MpiError::MpiError(const std::string& call, int code)
    : std::runtime_error(fmt::format("{}: {} (code {})", call, error_string(code), code)), code_(code) {}

void check(int code, const char* call) {
  if (code != MPI_SUCCESS) throw MpiError(call, code);
}

Environment::Environment(int* argc, char*** argv, bool thread_multiple) {
  const int wanted = thread_multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
  check(MPI_Init_thread(argc, argv, wanted, &provided_), "MPI_Init_thread");
  check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  if (thread_multiple && provided_ < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    throw MpiError("MPI_Init_thread (MPI_THREAD_MULTIPLE not provided)", MPI_ERR_OTHER);
  }
}

Environment::~Environment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  check(MPI_Get_library_version(text, &length), "MPI_Get_library_version");
  return std::string(text, std::size_t(std::max(0, length)));
}

namespace {

/** The value of a "Name:\tvalue" line of MPI_Get_library_version's text ("" if absent). */
std::string library_field(const std::string& library_version, const std::string& name) {
  const std::size_t at = library_version.find(name);
  if (at == std::string::npos) return std::string();
  const std::size_t begin = library_version.find_first_not_of(" \t", at + name.size());
  const std::size_t end = library_version.find('\n', begin);
  return begin == std::string::npos ? std::string() : library_version.substr(begin, end - begin);
}

}  // namespace

bool is_mpich_4_0(const std::string& library_version) {
  const std::string version = library_field(library_version, "MPICH Version:");
  // 4.0, 4.0.2, 4.0rc1; not 4.01 (were there one) nor 4.1
  return version.rfind("4.0", 0) == 0 && (version.size() == 3 || !std::isdigit(static_cast<unsigned char>(version[3])));
}

bool finalize_can_hang(const std::string& library_version) {
  return is_mpich_4_0(library_version) &&
         library_field(library_version, "MPICH Device:").find("ch4:ucx") != std::string::npos;
}

bool ranks_share_hosts(MPI_Comm comm, double timeout_s) {
  MPI_Comm host = MPI_COMM_NULL;
  check(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host), "MPI_Comm_split_type");
  int on_host = 1;
  check(MPI_Comm_size(host, &on_host), "MPI_Comm_size");
  check(MPI_Comm_free(&host), "MPI_Comm_free");
  int most = on_host;
  allreduce(&on_host, &most, 1, MPI_INT, MPI_MAX, comm, timeout_s, "ranks per host");
  return most > 1;
}

int world_rank() {
  int rank = 0;
  check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  return rank;
}

int world_size() {
  int size = 0;
  check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
  return size;
}

Comm::~Comm() {
  if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

Comm::Comm(Comm&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)), owned_(std::exchange(other.owned_, false)) {}

Comm& Comm::operator=(Comm&& other) noexcept {
  if (this != &other) {
    if (owned_ && comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
  }
  return *this;
}

int Comm::rank() const {
  int rank = 0;
  check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
  return rank;
}

int Comm::size() const {
  int size = 0;
  check(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
  return size;
}

Comm Comm::duplicate(MPI_Comm comm) {
  MPI_Comm out = MPI_COMM_NULL;
  check(MPI_Comm_dup(comm, &out), "MPI_Comm_dup");
  check(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return Comm(out, true);
}

Comm Comm::create_group(MPI_Comm parent, const std::vector<int>& members, int tag) {
  MPI_Group parent_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
  check(MPI_Comm_group(parent, &parent_group), "MPI_Comm_group");
  int code = MPI_Group_incl(parent_group, int(members.size()), members.data(), &group);
  MPI_Group_free(&parent_group);
  check(code, "MPI_Group_incl");
  MPI_Comm out = MPI_COMM_NULL;
  code = MPI_Comm_create_group(parent, group, tag, &out);
  MPI_Group_free(&group);
  check(code, "MPI_Comm_create_group");
  check(MPI_Comm_set_errhandler(out, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  return Comm(out, true);
}

Request::~Request() = default;  // an unfinished request only survives on error paths, which abort

Request::Request(Request&& other) noexcept : request_(std::exchange(other.request_, MPI_REQUEST_NULL)) {}

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) request_ = std::exchange(other.request_, MPI_REQUEST_NULL);
  return *this;
}

bool Request::test() { return test(MPI_STATUS_IGNORE); }

bool Request::test(MPI_Status* status) {
  if (request_ == MPI_REQUEST_NULL) return true;
  int done = 0;
  check(MPI_Test(&request_, &done, status), "MPI_Test");
  return done != 0;
}

void wait_with_timeout(Request& request, double timeout_s, const std::string& what,
                       std::chrono::microseconds poll_interval, const std::function<void()>& between) {
  const double start = MPI_Wtime();
  while (!request.test()) {
    if (between) between();
    const double waited = MPI_Wtime() - start;
    if (waited > timeout_s)
      throw TimeoutError(fmt::format("rank {}: stalled in {} for {:.1f} s", world_rank(), what, waited));
    if (poll_interval.count() > 0) std::this_thread::sleep_for(poll_interval);
  }
}

void barrier(MPI_Comm comm, double timeout_s, const std::string& what) {
  Request request;
  check(MPI_Ibarrier(comm, request.out()), "MPI_Ibarrier");
  wait_with_timeout(request, timeout_s, what);
}

void bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, double timeout_s,
           const std::string& what) {
  Request request;
  check(MPI_Ibcast(buffer, count, type, root, comm, request.out()), "MPI_Ibcast");
  wait_with_timeout(request, timeout_s, what);
}

void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
               double timeout_s, const std::string& what) {
  Request request;
  check(MPI_Iallreduce(send, recv, count, type, op, comm, request.out()), "MPI_Iallreduce");
  wait_with_timeout(request, timeout_s, what);
}

std::vector<std::string> gather_strings(const std::string& mine, int root, MPI_Comm comm,
                                        double timeout_s, const std::string& what) {
  int rank = 0, size = 0;
  check(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  check(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  const int my_length = int(mine.size());
  std::vector<int> lengths(rank == root ? std::size_t(size) : 0);
  {
    Request request;
    check(MPI_Igather(&my_length, 1, MPI_INT, lengths.data(), 1, MPI_INT, root, comm, request.out()),
          "MPI_Igather");
    wait_with_timeout(request, timeout_s, what);
  }
  std::vector<int> displacements(lengths.size());
  int total = 0;
  for (std::size_t i = 0; i < lengths.size(); ++i) {
    displacements[i] = total;
    total += lengths[i];
  }
  std::string all(std::size_t(total), '\0');
  {
    Request request;
    check(MPI_Igatherv(mine.data(), my_length, MPI_CHAR, all.data(), lengths.data(), displacements.data(),
                       MPI_CHAR, root, comm, request.out()),
          "MPI_Igatherv");
    wait_with_timeout(request, timeout_s, what);
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < lengths.size(); ++i)
    out.push_back(all.substr(std::size_t(displacements[i]), std::size_t(lengths[i])));
  return out;
}

void abort_world(int code) {
  std::fflush(stdout);
  std::fflush(stderr);
  // Give the launcher a moment to forward the message: MPI_Abort makes hydra kill every
  // process, and output still in its pipes can be lost.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest
}

}  // namespace cnnpar::real::mpi
