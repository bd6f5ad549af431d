// peer_death: what a rank of the NCCL layer sees when its peer dies in the middle of AllReduces.
//
// The parent process starts rank 0 (the survivor) and rank 1 (the victim) of a 2-rank
// communicator on this library, as copies of itself (fork and exec); it never touches CUDA. Both
// ranks loop on an AllReduce and, like PyTorch's watchdog, poll ncclCommGetAsyncError while each
// one runs. Once they loop, the parent kills rank 1 with SIGKILL and rank 0 reports how long it
// took to see the failure (from ncclCommGetAsyncError, or from a call), which error, how long
// ncclCommAbort took, and whether its stream and CUDA context are still fine. Then rank 0 builds
// a new communicator on the same GPU with a fresh rank 1 and checks an AllReduce.
//
// Exit status 0 when rank 0 saw the error expected within kDetectLimit, ncclCommAbort returned
// within kAbortLimit, the stream completed with no CUDA error and the new communicator's
// AllReduce was right. Build: nvcc -I<build>/include/mscclpp_nccl peer_death.cu -L<build>/lib
// -lmscclpp_nccl. Environment:
//   PEER_DEATH_COUNT=n   floats per AllReduce (default 4 Mi: 16 MiB; small counts take the
//                        packet kernels)
//   PEER_DEATH_FREEZE=1  SIGSTOP rather than SIGKILL: a frozen peer, whose links stay up; rank 0
//                        must see ncclSystemError once its kernel has polled
//                        MSCCLPP_COLL_MAX_SPINS times (set it small), then rank 1 is killed
#include <cuda_runtime.h>
#include <nccl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace {

constexpr double kDetectLimit = 2.0;   // seconds from the kill to rank 0's error (the goal)
constexpr double kAbortLimit = 5.0;    // seconds ncclCommAbort may take
constexpr double kStartLimit = 300.0;  // seconds for both ranks to reach their loop (first kernel load)
constexpr size_t kDefaultCount = 1 << 22;  // floats per AllReduce (16 MiB)
constexpr int kLoopsBeforeReady = 20;  // AllReduces rank 0 runs before it tells the parent

// Floats per AllReduce: PEER_DEATH_COUNT, else kDefaultCount.
size_t countOf() {
  const char* v = getenv("PEER_DEATH_COUNT");
  return v != nullptr && atol(v) > 0 ? size_t(atol(v)) : kDefaultCount;
}

double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

// What rank 0 sends the parent at the end.
struct Report {
  double errorAt;      // CLOCK_MONOTONIC when rank 0 saw the failure (0: never)
  int asyncError;      // the ncclResult_t it saw
  int seenBy;          // 1: ncclCommGetAsyncError, 2: a call's result
  double abortTook;    // seconds in ncclCommAbort
  int streamError;     // cudaError_t of the stream and context after the abort
  int secondOk;        // the new communicator's AllReduce was right
  char reason[512];    // ncclGetLastError after the failure
};

void die(const char* what) {
  fprintf(stderr, "peer_death: %s\n", what);
  _exit(2);
}

#define CUDA_OK(call)                                                                  \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    if (e_ != cudaSuccess) {                                                           \
      fprintf(stderr, "peer_death: %s: %s\n", #call, cudaGetErrorString(e_));          \
      _exit(2);                                                                        \
    }                                                                                  \
  } while (0)
#define NCCL_OK(call)                                                                  \
  do {                                                                                 \
    ncclResult_t r_ = (call);                                                          \
    if (r_ != ncclSuccess) {                                                           \
      fprintf(stderr, "peer_death: %s: %s (%s)\n", #call, ncclGetErrorString(r_),      \
              ncclGetLastError(nullptr));                                              \
      _exit(2);                                                                        \
    }                                                                                  \
  } while (0)

void writeAll(int fd, const void* p, size_t n) {
  if (write(fd, p, n) != (ssize_t)n) die("pipe write");
}
// Reads n bytes from fd, waiting at most limit seconds; false on timeout or end of file.
bool readAll(int fd, void* p, size_t n, double limit) {
  char* b = static_cast<char*>(p);
  const double end = now() + limit;
  while (n > 0) {
    pollfd pf{fd, POLLIN, 0};
    int left = int((end - now()) * 1000);
    if (left <= 0 || poll(&pf, 1, left) <= 0) return false;
    ssize_t k = read(fd, b, n);
    if (k <= 0) return false;
    b += k, n -= size_t(k);
  }
  return true;
}

// One rank of a 2-rank communicator whose id comes from (rank 1) or goes to (rank 0) idFd.
ncclComm_t join(int rank, int idFd) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_OK(ncclGetUniqueId(&id));
    writeAll(idFd, &id, sizeof(id));
  } else if (!readAll(idFd, &id, sizeof(id), kStartLimit)) {
    die("no unique id from rank 0");
  }
  ncclComm_t comm;
  NCCL_OK(ncclCommInitRank(&comm, 2, id, rank));
  return comm;
}

// Rank 1 of the first communicator: AllReduces until it is killed.
void victim(int idFd) {
  CUDA_OK(cudaSetDevice(0));
  ncclComm_t comm = join(1, idFd);
  float* buf;
  CUDA_OK(cudaMalloc(&buf, countOf() * sizeof(float)));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  for (;;) {
    if (ncclAllReduce(buf, buf, countOf(), ncclFloat, ncclSum, comm, s) != ncclSuccess) break;
    cudaStreamSynchronize(s);
  }
  _exit(3);  // rank 0 died first: the parent reports it
}

// The new communicator's check: every element of the sum is 1 + 2.
bool checkedAllReduce(ncclComm_t comm, int rank) {
  std::vector<float> host(1 << 20, float(rank + 1));
  float* buf;
  CUDA_OK(cudaMalloc(&buf, host.size() * sizeof(float)));
  CUDA_OK(cudaMemcpy(buf, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  NCCL_OK(ncclAllReduce(buf, buf, host.size(), ncclFloat, ncclSum, comm, nullptr));
  CUDA_OK(cudaMemcpy(host.data(), buf, host.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(buf));
  for (float v : host) {
    if (v != 3.0f) return false;
  }
  return true;
}

// Rank 1 of the second communicator.
void newPeer(int idFd) {
  CUDA_OK(cudaSetDevice(0));
  ncclComm_t comm = join(1, idFd);
  bool ok = checkedAllReduce(comm, 1);
  NCCL_OK(ncclCommDestroy(comm));
  _exit(ok ? 0 : 1);
}

// Rank 0: loops until the failure shows, aborts, then joins the second communicator.
void survivor(int idFd, int readyFd, int id2Fd, int reportFd) {
  Report rep{};
  CUDA_OK(cudaSetDevice(0));
  ncclComm_t comm = join(0, idFd);
  float* buf;
  CUDA_OK(cudaMalloc(&buf, countOf() * sizeof(float)));
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  for (int i = 0; rep.errorAt == 0; ++i) {
    ncclResult_t r = ncclAllReduce(buf, buf, countOf(), ncclFloat, ncclSum, comm, s);
    if (r != ncclSuccess) {
      rep.errorAt = now(), rep.asyncError = r, rep.seenBy = 2;
      break;
    }
    if (i == kLoopsBeforeReady) writeAll(readyFd, "R", 1);
    cudaError_t q;
    while ((q = cudaStreamQuery(s)) == cudaErrorNotReady) {
      ncclResult_t async;
      NCCL_OK(ncclCommGetAsyncError(comm, &async));
      if (async != ncclSuccess) {
        rep.errorAt = now(), rep.asyncError = async, rep.seenBy = 1;
        break;
      }
    }
    if (q != cudaSuccess && q != cudaErrorNotReady) {
      fprintf(stderr, "peer_death: rank 0's stream failed: %s\n", cudaGetErrorString(q));
      rep.streamError = q;
      break;
    }
  }
  writeAll(readyFd, "D", 1);  // the failure is seen: a frozen rank 1 may go now
  snprintf(rep.reason, sizeof(rep.reason), "%s", ncclGetLastError(comm));
  const double t0 = now();
  NCCL_OK(ncclCommAbort(comm));
  rep.abortTook = now() - t0;
  if (rep.streamError == 0) {
    cudaError_t e = cudaStreamSynchronize(s);
    if (e == cudaSuccess) e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    rep.streamError = e;
  }
  if (rep.streamError == 0) {
    ncclComm_t second = join(0, id2Fd);
    rep.secondOk = checkedAllReduce(second, 0);
    NCCL_OK(ncclCommDestroy(second));
  }
  writeAll(reportFd, &rep, sizeof(rep));
  _exit(0);
}

// Runs this program again as `role` with the file descriptors fds (fork, then exec at once: the
// library's Go runtime, started when the program loaded it, does not survive a fork alone).
pid_t spawn(const char* self, const char* role, std::vector<int> fds) {
  std::vector<std::string> args{self, role};
  for (int fd : fds) args.push_back(std::to_string(fd));
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t p = fork();
  if (p < 0) die("fork");
  if (p == 0) {
    execv(self, argv.data());
    _exit(127);
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3) {
    const std::string role = argv[1];
    auto fd = [&](int i) { return atoi(argv[2 + i]); };
    if (role == "survivor" && argc == 6) survivor(fd(0), fd(1), fd(2), fd(3));
    if (role == "victim") victim(fd(0));
    if (role == "newpeer") newPeer(fd(0));
    die("unknown role");
  }
  int fds[4][2];  // id, ready, id of the second communicator, report
  for (auto& f : fds) {
    if (pipe(f) != 0) die("pipe");
  }
  const char* self = "/proc/self/exe";
  char path[4096];
  ssize_t n = readlink(self, path, sizeof(path) - 1);
  if (n <= 0) die("readlink /proc/self/exe");
  path[n] = 0;
  pid_t rank0 = spawn(path, "survivor", {fds[0][1], fds[1][1], fds[2][1], fds[3][1]});
  pid_t rank1 = spawn(path, "victim", {fds[0][0]});
  // The parent keeps only the ends it reads (and the id's for the new peer): a rank that dies
  // closes its pipes, and the parent's read ends at once.
  for (int fd : {fds[0][0], fds[0][1], fds[1][1], fds[2][1], fds[3][1]}) close(fd);
  char ready;
  if (!readAll(fds[1][0], &ready, 1, kStartLimit)) {
    kill(rank0, SIGKILL), kill(rank1, SIGKILL);
    die("the ranks did not start their loop");
  }
  usleep(200 * 1000);  // well inside the loop
  const bool freeze = getenv("PEER_DEATH_FREEZE") != nullptr && atoi(getenv("PEER_DEATH_FREEZE")) != 0;
  kill(rank1, freeze ? SIGSTOP : SIGKILL);
  const double killedAt = now();
  if (freeze) {
    // Rank 1 is killed once rank 0 has seen the failure (its kernel gave up), so that rank 0 can
    // go on to the new communicator.
    char seen;
    readAll(fds[1][0], &seen, 1, 120);
    kill(rank1, SIGKILL);
  }
  waitpid(rank1, nullptr, 0);
  pid_t rank1b = spawn(path, "newpeer", {fds[2][0]});
  close(fds[2][0]);

  Report rep{};
  const bool reported = readAll(fds[3][0], &rep, sizeof(rep), 120);
  int st1 = 0;
  if (!reported) kill(rank0, SIGKILL);
  waitpid(rank0, nullptr, 0);
  if (reported && rep.streamError == 0) {
    waitpid(rank1b, &st1, 0);
  } else {
    kill(rank1b, SIGKILL), waitpid(rank1b, nullptr, 0);
  }
  if (!reported) die("rank 0 sent no report within 120 s (it hangs)");

  const double detect = rep.errorAt - killedAt;
  printf("peer_death: rank 1 %s; rank 0 saw %s (%d) %.3f s later through %s\n", freeze ? "frozen" : "killed",
         ncclGetErrorString(ncclResult_t(rep.asyncError)), rep.asyncError, detect,
         rep.seenBy == 1 ? "ncclCommGetAsyncError" : "a call's result");
  printf("peer_death: reason: %s\n", rep.reason);
  printf("peer_death: ncclCommAbort took %.3f s; stream and context afterwards: %s\n", rep.abortTook,
         cudaGetErrorName(cudaError_t(rep.streamError)));
  printf("peer_death: a new communicator on the same GPU: AllReduce %s\n",
         rep.secondOk ? "right" : "wrong or not run");
  const double limit = freeze ? 60 : kDetectLimit;  // frozen: as long as the spins take
  const bool ok = rep.asyncError == (freeze ? ncclSystemError : ncclRemoteError) && detect >= 0 && detect <= limit &&
                  rep.abortTook <= kAbortLimit && rep.streamError == 0 && rep.secondOk &&
                  WIFEXITED(st1) && WEXITSTATUS(st1) == 0;
  printf("peer_death: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
