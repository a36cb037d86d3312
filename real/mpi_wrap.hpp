#pragma once
// Thin, checked wrappers around the MPI calls the executor uses: every call's return code
// is checked and turned into MpiError carrying MPI's own error string; communicators and
// requests are RAII. Only real/ includes this header (model/ never sees MPI).
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <mpi.h>

namespace cnnpar::real::mpi {

/** A failed MPI call: "MPI_Iallreduce: <MPI's error string> (code N)". */
class MpiError : public std::runtime_error {
 public:
  MpiError(const std::string& call, int code);
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/** A blocking step that did not complete within its time limit (a peer stalled or died). */
class TimeoutError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** Throws MpiError if `code` is not MPI_SUCCESS. */
void check(int code, const char* call);
#define CNNPAR_MPI(call) ::cnnpar::real::mpi::check((call), #call)

/** Error string of an MPI error code. */
std::string error_string(int code);

/** MPI_Init_thread / MPI_Finalize. Switches MPI_COMM_WORLD to MPI_ERRORS_RETURN so every
 *  failure comes back through check(). */
class Environment {
 public:
  /** `thread_multiple` asks for MPI_THREAD_MULTIPLE (communication-thread mode);
   *  @throws MpiError if the library cannot provide it. */
  Environment(int* argc, char*** argv, bool thread_multiple);
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;
  int provided_thread_level() const { return provided_; }

 private:
  int provided_ = MPI_THREAD_SINGLE;
};

int world_rank();
int world_size();

/** MPI_Get_library_version's text. */
std::string library_version();

/** True when `library_version` names MPICH 4.0.x (any device). */
bool is_mpich_4_0(const std::string& library_version);

/** True when `library_version` names MPICH 4.0.x on its ch4:ucx device, whose MPI_Finalize can
 *  hang after all work is done. Its UCX finalize hook closes every endpoint in flush mode and
 *  only then enters the blocking PMI barrier. Over TCP the flush waits for the peer's
 *  acknowledgement (a 25-byte UCX PUT request left unread in the peer's socket), and a peer that
 *  has finished its own closes sits in the PMI barrier and never reads it: 4 to 8 of 10 4-rank
 *  runs across network namespaces hung so. MPICH 4.1 enters the barrier before the closes.
 *  A run on such a library leaves after its final barrier without MPI_Finalize when every rank
 *  is alone on its host (apps/cnnpar-run/main.cpp). */
bool finalize_can_hang(const std::string& library_version);

/** True when some host runs more than one rank of `comm` (MPI_COMM_TYPE_SHARED groups of
 *  more than one rank). Collective over `comm`. MPICH's Hydra kills a host's other ranks when
 *  one leaves without MPI_Finalize, so only ranks alone on their hosts may skip it. */
bool ranks_share_hosts(MPI_Comm comm, double timeout_s);

/** Owning communicator (freed on destruction unless it is a predefined one). */
class Comm {
 public:
  Comm() = default;
  explicit Comm(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {}
  ~Comm();
  Comm(Comm&& other) noexcept;
  Comm& operator=(Comm&& other) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

  /** MPI_Comm_dup of `comm`. */
  static Comm duplicate(MPI_Comm comm);
  /** MPI_Comm_create_group of `members` (world ranks, sorted) out of `parent`; collective over
   *  `members` only. The new communicator's rank i is members[i]. */
  static Comm create_group(MPI_Comm parent, const std::vector<int>& members, int tag);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
};

/** Owning request: an unfinished request is cancelled (point-to-point) or left to MPI on
 *  destruction; completed requests are MPI_REQUEST_NULL. */
class Request {
 public:
  Request() = default;
  ~Request();
  Request(Request&& other) noexcept;
  Request& operator=(Request&& other) noexcept;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  MPI_Request* out() { return &request_; }  ///< for MPI_I* calls
  bool active() const { return request_ != MPI_REQUEST_NULL; }
  /** MPI_Test; true once complete (then the request is MPI_REQUEST_NULL). */
  bool test();
  /** The same, filling `status` when it completes (a receive from any source). */
  bool test(MPI_Status* status);

 private:
  MPI_Request request_ = MPI_REQUEST_NULL;
};

/** Polls `request` (MPI_Test, sleeping `poll_interval` between tests) until it completes;
 *  throws TimeoutError naming `what` after `timeout_s` seconds. `between` runs between
 *  polls (may be empty). */
void wait_with_timeout(Request& request, double timeout_s, const std::string& what,
                       std::chrono::microseconds poll_interval = std::chrono::microseconds(50),
                       const std::function<void()>& between = {});

// Blocking helpers built on non-blocking calls with a time limit, so a dead or stalled peer
// becomes a TimeoutError instead of a hang.
void barrier(MPI_Comm comm, double timeout_s, const std::string& what);
void bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm, double timeout_s,
           const std::string& what);
void allreduce(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
               double timeout_s, const std::string& what);
/** Gathers a string from every rank onto `root` (result empty on other ranks). */
std::vector<std::string> gather_strings(const std::string& mine, int root, MPI_Comm comm,
                                        double timeout_s, const std::string& what);

/** MPI_Abort(MPI_COMM_WORLD, code); never returns. */
[[noreturn]] void abort_world(int code);

}  // namespace cnnpar::real::mpi
