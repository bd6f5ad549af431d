// gpu_ping_pong_mp: the ping-pong of gpu_ping_pong with one process per GPU, set up through a
// bootstrap and a communicator instead of by hand.
//
//   bootstrap     TCP messages between the ranks (send/recv, all-gather, barrier); created either
//                 at a known "if:ip:port" where rank 0 listens, or from a unique id that rank 0
//                 makes and shares by any means (here MPI_Bcast);
//   communicator  bootstrap + context: connect(), buildSemaphore(), sendMemory()/recvMemory()
//                 exchange the endpoints, stubs and memory descriptors for you and return futures.
//
// The ping-pong runs twice: over a bootstrap at lo:127.0.0.1:<port>, torn down, then over a
// bootstrap from a unique id. Each time the bootstrap's rank, size, all-gather and send/recv are
// checked, and rank 1 must see every round take longer than 1 ms.
//
// Run with two ranks, one GPU each (rank r uses GPU r; ranks beyond 1 leave at once):
//   mpirun -np 2 ... ./gpu_ping_pong_mp [port]
// The port defaults to 40000 + (rank 0's pid % 20000). Rank 0 prints "Succeed!" and every rank
// exits 0 on success.
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../../common/example_util.h"

using example::kMaxSpins;

namespace {

constexpr int kIterations = 100;
constexpr long long kSpinCycles = 10000000;  // rank 0's work per round: ~5 ms at 2 GHz
constexpr uint64_t kMinRoundNs = 1000000;    // every round rank 1 sees must be longer than 1 ms

// Rank 0 (GPU 0): wait, "work", answer.
__global__ void pongKernel(mscclppBaseMemoryChannelDeviceHandle* chan, int iterations) {
  if (threadIdx.x + blockIdx.x * blockDim.x != 0) return;
  for (int i = 0; i < iterations; ++i) {
    chan->relaxedWait(kMaxSpins);
    example::spinCycles(kSpinCycles);
    chan->relaxedSignal();
  }
}

// Rank 1 (GPU 1): signal, wait; records the shortest round (ns).
__global__ void pingKernel(mscclppBaseMemoryChannelDeviceHandle* chan, int iterations, uint64_t* shortestRoundNs) {
  if (threadIdx.x + blockIdx.x * blockDim.x != 0) return;
  uint64_t shortest = ~0ull;
  for (int i = 0; i < iterations; ++i) {
    const uint64_t start = example::globalTimerNs();
    chan->relaxedSignal();
    chan->relaxedWait(kMaxSpins);
    const uint64_t ns = example::globalTimerNs() - start;
    if (ns < shortest) shortest = ns;
  }
  *shortestRoundNs = shortest;
}

// Builds a connection, a semaphore and a channel to the other rank through a communicator on
// `bootstrap`, runs the ping-pong and tears it all down (not the bootstrap). Returns whether
// rank 1's timing check passed (always true on rank 0).
bool pingPong(mscclppBootstrap_t bootstrap, int rank, int gpu) {
  const int peer = 1 - rank;
  const int tag = 0;

  mscclppContext_t ctx = nullptr;
  CHECK_MSCCLPP(mscclppContextCreate(&ctx));
  mscclppCommunicator_t comm = nullptr;
  CHECK_MSCCLPP(mscclppCommunicatorCreate(bootstrap, ctx, &comm));

  // connect() exchanges endpoints with the peer (which makes the mirror call) and returns a future.
  std::printf("GPU %d: Creating a connection ...\n", gpu);
  mscclppFuture_t future = nullptr;
  CHECK_MSCCLPP(mscclppCommunicatorConnect(comm, mscclppTransportP2P, gpu, peer, tag, &future));
  mscclppConnection_t conn = nullptr;
  CHECK_MSCCLPP(mscclppFutureGetConnection(future, &conn));
  CHECK_MSCCLPP(mscclppFutureDestroy(future));

  // buildSemaphore() makes this side's stub, swaps stubs with the peer and builds the semaphore.
  std::printf("GPU %d: Creating a semaphore ...\n", gpu);
  CHECK_MSCCLPP(mscclppCommunicatorBuildSemaphore(comm, conn, peer, tag, &future));
  mscclppSemaphore_t sema = nullptr;
  CHECK_MSCCLPP(mscclppFutureGetSemaphore(future, &sema));
  CHECK_MSCCLPP(mscclppFutureDestroy(future));

  std::printf("GPU %d: Creating a channel ...\n", gpu);
  mscclppBaseMemoryChannelDeviceHandle handle;
  CHECK_MSCCLPP(mscclppBaseMemoryChannelGetDeviceHandle(sema, &handle));
  mscclppBaseMemoryChannelDeviceHandle* devHandle = nullptr;
  CHECK_CUDA(cudaMalloc(&devHandle, sizeof(handle)));
  CHECK_CUDA(cudaMemcpy(devHandle, &handle, sizeof(handle), cudaMemcpyHostToDevice));
  uint64_t* devShortest = nullptr;
  CHECK_CUDA(cudaMalloc(&devShortest, sizeof(uint64_t)));
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));

  std::printf("GPU %d: Launching a GPU kernel ...\n", gpu);
  CHECK_CUDA(cudaEventRecord(start, stream));
  if (rank == 0) {
    pongKernel<<<1, 1, 0, stream>>>(devHandle, kIterations);
  } else {
    pingKernel<<<1, 1, 0, stream>>>(devHandle, kIterations, devShortest);
  }
  CHECK_LAUNCH();
  CHECK_CUDA(cudaEventRecord(stop, stream));
  example::waitStream(gpu, stream, "the ping-pong kernel");

  bool ok = true;
  if (rank == 1) {
    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    uint64_t shortestNs = 0;
    CHECK_CUDA(cudaMemcpy(&shortestNs, devShortest, sizeof(shortestNs), cudaMemcpyDeviceToHost));
    std::printf("Elapsed %g ms per iteration (%d)\n", ms / kIterations, kIterations);
    if (shortestNs <= kMinRoundNs) {
      std::printf("%sthe shortest round took %.3f ms, expected more than %.3f ms (GPU 0 spins %lld cycles per "
                  "round): relaxedWait() returned before the peer signalled\n",
                  example::failPrefix().c_str(), shortestNs / 1e6, kMinRoundNs / 1e6, kSpinCycles);
      ok = false;
    }
  }
  std::fflush(stdout);

  // Neither side may free what the peer's GPU still uses: meet first, then tear down.
  CHECK_MSCCLPP(mscclppBootstrapBarrierAll(bootstrap));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(devShortest));
  CHECK_CUDA(cudaFree(devHandle));
  CHECK_MSCCLPP(mscclppSemaphoreDestroy(sema));
  CHECK_MSCCLPP(mscclppConnectionRelease(conn));
  CHECK_MSCCLPP(mscclppCommunicatorDestroy(comm));
  CHECK_MSCCLPP(mscclppContextDestroy(ctx));
  return ok;
}

// Checks that the bootstrap agrees with MPI about who is who, and uses its messages once: an
// all-gather of every rank's number and a send/recv of a word to the other rank.
void checkBootstrap(mscclppBootstrap_t bootstrap, int rank, int nranks) {
  int bRank = -1, bSize = -1;
  CHECK_MSCCLPP(mscclppBootstrapRank(bootstrap, &bRank));
  CHECK_MSCCLPP(mscclppBootstrapSize(bootstrap, &bSize));
  if (bRank != rank || bSize != nranks) {
    example::fail("the bootstrap says rank %d of %d, MPI says %d of %d", bRank, bSize, rank, nranks);
  }
  std::vector<int> all(nranks, -1);
  all[rank] = 1000 + rank;
  CHECK_MSCCLPP(mscclppBootstrapAllGatherBytes(bootstrap, all.data(), sizeof(int)));
  for (int r = 0; r < nranks; ++r) {
    if (all[r] != 1000 + r) example::fail("bootstrap all-gather: slot %d holds %d, want %d", r, all[r], 1000 + r);
  }
  const int peer = 1 - rank, tag = 7;
  const uint64_t mine = 0xC0FFEE00ull + rank;
  uint64_t theirs = 0;
  CHECK_MSCCLPP(mscclppBootstrapSend(bootstrap, &mine, sizeof(mine), peer, tag));
  CHECK_MSCCLPP(mscclppBootstrapRecv(bootstrap, &theirs, sizeof(theirs), peer, tag));
  if (theirs != 0xC0FFEE00ull + peer) {
    example::fail("bootstrap recv from rank %d: got 0x%llx, want 0x%llx", peer,
                  static_cast<unsigned long long>(theirs), 0xC0FFEE00ull + peer);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 0;
  const int rank = example::startMpi(&argc, &argv, "gpu_ping_pong_mp", &nranks);
  // The tutorial is between ranks 0 and 1; further ranks (one per extra GPU) only leave.
  MPI_Comm pair = example::pairOfRanks(rank, nranks);
  if (pair == MPI_COMM_NULL) {
    MPI_Finalize();
    return 0;
  }
  nranks = 2;

  // Every rank sees the same GPUs, so all reach the same verdict and leave together.
  int deviceCount = 0;
  CHECK_CUDA(cudaGetDeviceCount(&deviceCount));
  if (deviceCount < 2) {
    if (rank == 0) std::printf("SKIP gpu_ping_pong_mp: at least two GPUs are required, found %d\n", deviceCount);
    MPI_Comm_free(&pair);
    MPI_Finalize();
    return example::kExitSkipped;
  }
  const char* problem = nullptr;
  int canAccess01 = 0, canAccess10 = 0;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&canAccess01, 0, 1));
  CHECK_CUDA(cudaDeviceCanAccessPeer(&canAccess10, 1, 0));
  if (!canAccess01) problem = "GPU 0 cannot access GPU 1";
  else if (!canAccess10) problem = "GPU 1 cannot access GPU 0";
  if (problem != nullptr) {
    if (rank == 0) std::printf("%s\n", problem);
    MPI_Comm_free(&pair);
    MPI_Finalize();
    return 1;
  }
  const int gpu = rank;
  example::g_id.device = gpu;
  CHECK_CUDA(cudaSetDevice(gpu));

  // Rank 0 listens on this port; a per-job default makes collisions between jobs unlikely.
  int port = 0;
  if (argc > 1) {
    port = std::atoi(argv[1]);
  } else {
    int pid = static_cast<int>(getpid());
    MPI_Bcast(&pid, 1, MPI_INT, 0, pair);
    port = 40000 + pid % 20000;
  }
  if (port <= 0 || port > 65535) example::fail("bad port %d", port);
  const std::string ifIpPort = example::strf("lo:127.0.0.1:%d", port);

  bool ok = true;

  // 1. A bootstrap at a known address: rank 0 listens there, the others connect.
  if (rank == 0) std::printf("Bootstrap 1 of 2: TCP at %s\n", ifIpPort.c_str());
  std::fflush(stdout);
  MPI_Barrier(pair);
  std::printf("GPU %d: Initializing a bootstrap ...\n", gpu);
  mscclppBootstrap_t bootstrap = nullptr;
  CHECK_MSCCLPP(mscclppBootstrapCreate(&bootstrap, rank, nranks, ifIpPort.c_str()));
  checkBootstrap(bootstrap, rank, nranks);
  ok = pingPong(bootstrap, rank, gpu) && ok;
  CHECK_MSCCLPP(mscclppBootstrapDestroy(bootstrap));
  bootstrap = nullptr;

  // 2. A bootstrap from a unique id: rank 0 makes it (and starts listening), MPI carries it.
  MPI_Barrier(pair);
  if (rank == 0) std::printf("Bootstrap 2 of 2: TCP through a unique id\n");
  std::fflush(stdout);
  MPI_Barrier(pair);
  mscclppUniqueId id = {};
  if (rank == 0) CHECK_MSCCLPP(mscclppBootstrapCreateUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, pair);
  std::printf("GPU %d: Initializing a bootstrap ...\n", gpu);
  CHECK_MSCCLPP(mscclppBootstrapCreateFromId(&bootstrap, rank, nranks, id));
  checkBootstrap(bootstrap, rank, nranks);
  ok = pingPong(bootstrap, rank, gpu) && ok;
  CHECK_MSCCLPP(mscclppBootstrapDestroy(bootstrap));

  int mine = ok ? 1 : 0, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, pair);
  if (rank == 0) {
    if (all) std::printf("Succeed!\n");
    else std::printf("FAIL %s: see the lines above\n", example::g_id.program);
  }
  std::fflush(stdout);
  MPI_Comm_free(&pair);
  MPI_Finalize();
  return all ? 0 : 1;
}
