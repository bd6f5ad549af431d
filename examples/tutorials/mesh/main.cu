// mesh: every rank connects to every other rank and exchanges data with all of them both ways,
// through port channels and memory channels built over the same connections.
//
// Each rank has two buffers of nranks chunks, and owns chunk `rank` of each:
//   portBuf  sent with port channels: the proxy copies our chunk into the same chunk of each
//            neighbour's portBuf (putWithSignal), the neighbour waits for the signal;
//   memBuf   sent with memory channels: the GPU threads of one block store our chunk straight
//            into the same chunk of the neighbour's memBuf (put), then one thread signals.
// Per neighbour: one connection (tag 0), one semaphore for the port channel (tag 1, counted by
// the proxies) and one for the memory channel (tag 2, counted by the GPUs), and the two buffers'
// descriptors (tags 0 and 1). All of it is started at once through the communicator's futures.
//
// The kernel has one block per neighbour. After it, every rank checks every byte of every
// neighbour's chunk in both buffers, and that its own chunks are unchanged; kRounds rounds, each
// with new data. Rank 0 prints "PASS mesh: ..." or "FAIL mesh: ...".
//
// Run with any number of ranks >= 2 (rank r uses GPU r % deviceCount):
//   mpirun -np N ... ./mesh [chunkBytes]

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../common/example_util.h"

using example::kMaxSpins;

namespace {

constexpr uint64_t kDefaultChunkBytes = 1ull << 20;
constexpr int kRounds = 3;
constexpr int kBlockThreads = 512;
constexpr uint8_t kPoison = 0xEE;
constexpr uint32_t kPortKind = 1, kMemKind = 2;  // pattern seeds: makeSeed(kind, sender, round)

// Block b serves neighbour b (port[b], mem[b]).
__global__ void meshExchangeKernel(mscclppPortChannelDeviceHandle* port, mscclppMemoryChannelDeviceHandle* mem,
                                   int rank, uint64_t chunkBytes) {
  mscclppPortChannelDeviceHandle* pc = &port[blockIdx.x];
  mscclppMemoryChannelDeviceHandle* mc = &mem[blockIdx.x];
  const uint64_t offset = rank * chunkBytes;  // our chunk, on both sides

  // Port channel: one thread asks the proxy to copy and signal.
  if (threadIdx.x == 0) pc->putWithSignal(offset, chunkBytes);

  // Memory channel: all threads of the block copy, then one thread publishes with a release signal.
  mc->put(offset, chunkBytes, threadIdx.x, blockDim.x);
  __syncthreads();
  if (threadIdx.x == 0) {
    mc->signal();
    pc->wait(kMaxSpins);  // the neighbour's chunk has landed in our portBuf
    mc->wait(kMaxSpins);  // ... and in our memBuf
    pc->flush(kMaxSpins); // our port-channel requests are complete (the source may change)
  }
}

struct Neighbour {
  int rank;
  mscclppConnection_t conn = nullptr;
  mscclppSemaphore_t portSema = nullptr, memSema = nullptr;
  mscclppRegMem_t portRemote = nullptr, memRemote = nullptr;
  mscclppFuture_t connF = nullptr, portSemaF = nullptr, memSemaF = nullptr;
  mscclppFuture_t sendPortF = nullptr, sendMemF = nullptr, recvPortF = nullptr, recvMemF = nullptr;
};

}  // namespace

int main(int argc, char** argv) {
  int nranks = 0;
  const int rank = example::startMpi(&argc, &argv, "mesh", &nranks);
  if (nranks < 2) example::fail("run with at least 2 ranks, got %d", nranks);

  uint64_t chunkBytes = kDefaultChunkBytes;
  if (argc > 1) chunkBytes = std::strtoull(argv[1], nullptr, 0);
  if (chunkBytes == 0 || chunkBytes * nranks > 0xffffffffull) {
    example::fail("chunk size %llu: must be > 0 and nranks * chunk must fit the port channel's 32-bit offsets",
                  static_cast<unsigned long long>(chunkBytes));
  }
  const uint64_t bufferBytes = chunkBytes * nranks;

  int deviceCount = 0;
  CHECK_CUDA(cudaGetDeviceCount(&deviceCount));
  if (deviceCount < 1) example::fail("no GPU");
  const int gpu = rank % deviceCount;
  example::g_id.device = gpu;
  CHECK_CUDA(cudaSetDevice(gpu));

  mscclppUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank == 0) CHECK_MSCCLPP(mscclppBootstrapCreateUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
  mscclppBootstrap_t bootstrap = nullptr;
  CHECK_MSCCLPP(mscclppBootstrapCreateFromId(&bootstrap, rank, nranks, id));
  mscclppContext_t ctx = nullptr;
  CHECK_MSCCLPP(mscclppContextCreate(&ctx));
  mscclppCommunicator_t comm = nullptr;
  CHECK_MSCCLPP(mscclppCommunicatorCreate(bootstrap, ctx, &comm));

  uint8_t *portBuf = nullptr, *memBuf = nullptr;
  CHECK_CUDA(cudaMalloc(&portBuf, bufferBytes));
  CHECK_CUDA(cudaMalloc(&memBuf, bufferBytes));
  mscclppRegMem_t portLocal = nullptr, memLocal = nullptr;
  CHECK_MSCCLPP(mscclppRegisterMemory(ctx, portBuf, bufferBytes, mscclppTransportP2P, &portLocal));
  CHECK_MSCCLPP(mscclppRegisterMemory(ctx, memBuf, bufferBytes, mscclppTransportP2P, &memLocal));

  // Start the connections and the memory exchanges with every neighbour, then collect them.
  std::vector<Neighbour> nbrs;
  for (int r = 0; r < nranks; ++r) {
    if (r == rank) continue;
    Neighbour n;
    n.rank = r;
    CHECK_MSCCLPP(mscclppCommunicatorConnect(comm, mscclppTransportP2P, gpu, r, /*tag*/ 0, &n.connF));
    CHECK_MSCCLPP(mscclppCommunicatorSendMemory(comm, portLocal, r, /*tag*/ 0, &n.sendPortF));
    CHECK_MSCCLPP(mscclppCommunicatorSendMemory(comm, memLocal, r, /*tag*/ 1, &n.sendMemF));
    CHECK_MSCCLPP(mscclppCommunicatorRecvMemory(comm, r, /*tag*/ 0, &n.recvPortF));
    CHECK_MSCCLPP(mscclppCommunicatorRecvMemory(comm, r, /*tag*/ 1, &n.recvMemF));
    nbrs.push_back(n);
  }
  // Two semaphores per connection: a port channel's is advanced by the peer's proxy, a memory
  // channel's by the peer's GPU threads, so they cannot share one.
  for (Neighbour& n : nbrs) {
    CHECK_MSCCLPP(mscclppFutureGetConnection(n.connF, &n.conn));
    CHECK_MSCCLPP(mscclppCommunicatorBuildSemaphore(comm, n.conn, n.rank, /*tag*/ 1, &n.portSemaF));
    CHECK_MSCCLPP(mscclppCommunicatorBuildSemaphore(comm, n.conn, n.rank, /*tag*/ 2, &n.memSemaF));
  }
  for (Neighbour& n : nbrs) {
    CHECK_MSCCLPP(mscclppFutureGetMemory(n.recvPortF, &n.portRemote));
    CHECK_MSCCLPP(mscclppFutureGetMemory(n.recvMemF, &n.memRemote));
    CHECK_MSCCLPP(mscclppFutureWait(n.sendPortF));
    CHECK_MSCCLPP(mscclppFutureWait(n.sendMemF));
    CHECK_MSCCLPP(mscclppFutureGetSemaphore(n.portSemaF, &n.portSema));
    CHECK_MSCCLPP(mscclppFutureGetSemaphore(n.memSemaF, &n.memSema));
    for (mscclppFuture_t f : {n.connF, n.sendPortF, n.sendMemF, n.recvPortF, n.recvMemF, n.portSemaF, n.memSemaF}) {
      CHECK_MSCCLPP(mscclppFutureDestroy(f));
    }
    for (mscclppRegMem_t m : {n.portRemote, n.memRemote}) {
      void* ptr = nullptr;
      size_t size = 0;
      CHECK_MSCCLPP(mscclppMemoryData(m, &ptr, &size));
      if (ptr == nullptr || size != bufferBytes) {
        example::fail("rank %d's memory is mapped at %p with %zu bytes, expected %llu bytes", n.rank, ptr, size,
                      static_cast<unsigned long long>(bufferBytes));
      }
    }
  }

  // The channels: port channels through one proxy service, memory channels directly.
  mscclppProxyService_t proxy = nullptr;
  CHECK_MSCCLPP(mscclppProxyServiceCreate(0, &proxy));
  uint32_t portLocalId = 0;
  CHECK_MSCCLPP(mscclppProxyServiceAddMemory(proxy, portLocal, &portLocalId));
  std::vector<mscclppPortChannelDeviceHandle> portHandles(nbrs.size());
  std::vector<mscclppMemoryChannelDeviceHandle> memHandles(nbrs.size());
  for (size_t i = 0; i < nbrs.size(); ++i) {
    uint32_t semaId = 0, remoteId = 0;
    CHECK_MSCCLPP(mscclppProxyServiceAddSemaphore(proxy, nbrs[i].portSema, &semaId));
    CHECK_MSCCLPP(mscclppProxyServiceAddMemory(proxy, nbrs[i].portRemote, &remoteId));
    CHECK_MSCCLPP(mscclppProxyServicePortChannel(proxy, semaId, /*dst*/ remoteId, /*src*/ portLocalId, &portHandles[i]));
    CHECK_MSCCLPP(mscclppMemoryChannelGetDeviceHandle(nbrs[i].memSema, /*dst*/ nbrs[i].memRemote, /*src*/ memLocal,
                                                      /*packetBuffer*/ nullptr, &memHandles[i]));
  }
  mscclppPortChannelDeviceHandle* devPort = nullptr;
  mscclppMemoryChannelDeviceHandle* devMem = nullptr;
  CHECK_CUDA(cudaMalloc(&devPort, portHandles.size() * sizeof(portHandles[0])));
  CHECK_CUDA(cudaMalloc(&devMem, memHandles.size() * sizeof(memHandles[0])));
  CHECK_CUDA(cudaMemcpy(devPort, portHandles.data(), portHandles.size() * sizeof(portHandles[0]),
                        cudaMemcpyHostToDevice));
  CHECK_CUDA(cudaMemcpy(devMem, memHandles.data(), memHandles.size() * sizeof(memHandles[0]), cudaMemcpyHostToDevice));
  CHECK_MSCCLPP(mscclppProxyServiceStart(proxy));

  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  example::CheckResult* devCheck = nullptr;
  CHECK_CUDA(cudaMalloc(&devCheck, sizeof(example::CheckResult)));

  unsigned long long wrongBytes = 0;
  for (int round = 0; round < kRounds; ++round) {
    // Our chunks get this round's data, every other chunk the poison. Nobody writes into our
    // buffers before the barrier, which every rank reaches only after its own preparation.
    CHECK_CUDA(cudaMemsetAsync(portBuf, kPoison, bufferBytes, stream));
    CHECK_CUDA(cudaMemsetAsync(memBuf, kPoison, bufferBytes, stream));
    example::launchFill(portBuf + rank * chunkBytes, chunkBytes, example::makeSeed(kPortKind, rank, round), stream);
    example::launchFill(memBuf + rank * chunkBytes, chunkBytes, example::makeSeed(kMemKind, rank, round), stream);
    example::waitStream(gpu, stream, "preparing the buffers");
    CHECK_MSCCLPP(mscclppBootstrapBarrierAll(bootstrap));

    meshExchangeKernel<<<static_cast<unsigned int>(nbrs.size()), kBlockThreads, 0, stream>>>(devPort, devMem, rank,
                                                                                              chunkBytes);
    CHECK_LAUNCH();
    example::waitStream(gpu, stream, example::strf("meshExchangeKernel (round %d)", round));

    // Every chunk of both buffers: the sender's data (our own chunk: ours, unchanged).
    for (int sender = 0; sender < nranks; ++sender) {
      for (int which = 0; which < 2; ++which) {
        const uint32_t kind = which == 0 ? kPortKind : kMemKind;
        const uint8_t* chunk = (which == 0 ? portBuf : memBuf) + sender * chunkBytes;
        const uint32_t seed = example::makeSeed(kind, sender, round);
        example::launchCheck(chunk, chunkBytes, seed, devCheck, stream);
        example::waitStream(gpu, stream, "checking the data");
        const example::CheckResult res = example::readCheck(devCheck);
        if (res.wrong == 0) continue;
        wrongBytes += res.wrong;
        uint8_t got = 0;
        CHECK_CUDA(cudaMemcpy(&got, chunk + res.firstWrong, 1, cudaMemcpyDeviceToHost));
        std::printf("%sround %d: %s channel, chunk of rank %d: %llu of %llu bytes wrong, the first at offset %llu "
                    "(got 0x%02x%s, want 0x%02x)\n",
                    example::failPrefix().c_str(), round, which == 0 ? "port" : "memory", sender, res.wrong,
                    static_cast<unsigned long long>(chunkBytes), res.firstWrong, got,
                    got == kPoison ? ": never written" : "", example::patternByte(seed, res.firstWrong));
        std::fflush(stdout);
      }
    }
    // Nobody may overwrite a neighbour's buffer (next round) before that neighbour has checked it.
    CHECK_MSCCLPP(mscclppBootstrapBarrierAll(bootstrap));
  }

  // Tear down: the proxy first (no kernel uses the channels any more), then the objects.
  CHECK_MSCCLPP(mscclppProxyServiceStop(proxy));
  CHECK_MSCCLPP(mscclppProxyServiceDestroy(proxy));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(devCheck));
  CHECK_CUDA(cudaFree(devPort));
  CHECK_CUDA(cudaFree(devMem));
  for (Neighbour& n : nbrs) {
    CHECK_MSCCLPP(mscclppSemaphoreDestroy(n.portSema));
    CHECK_MSCCLPP(mscclppSemaphoreDestroy(n.memSema));
    CHECK_MSCCLPP(mscclppMemoryRelease(n.portRemote));
    CHECK_MSCCLPP(mscclppMemoryRelease(n.memRemote));
    CHECK_MSCCLPP(mscclppConnectionRelease(n.conn));
  }
  CHECK_MSCCLPP(mscclppMemoryRelease(portLocal));
  CHECK_MSCCLPP(mscclppMemoryRelease(memLocal));
  CHECK_MSCCLPP(mscclppCommunicatorDestroy(comm));
  CHECK_MSCCLPP(mscclppContextDestroy(ctx));
  CHECK_MSCCLPP(mscclppBootstrapDestroy(bootstrap));
  CHECK_CUDA(cudaFree(portBuf));
  CHECK_CUDA(cudaFree(memBuf));

  unsigned long long totalWrong = 0;
  MPI_Allreduce(&wrongBytes, &totalWrong, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) {
    if (totalWrong == 0) {
      std::printf("PASS mesh: %d ranks, %d GPUs, %s chunks, port + memory channels to %d neighbours each, %d rounds\n",
                  nranks, nranks < deviceCount ? nranks : deviceCount, example::sizeText(chunkBytes).c_str(),
                  nranks - 1, kRounds);
    } else {
      std::printf("FAIL mesh: %d ranks: %llu wrong bytes in all (see the lines above)\n", nranks, totalWrong);
    }
  }
  std::fflush(stdout);
  MPI_Finalize();
  return totalWrong == 0 ? 0 : 1;
}
