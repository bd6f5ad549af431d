// bidir_port_channel: two GPUs send to each other at once through a port channel.
//
// A port channel does not copy with GPU threads: a GPU thread pushes a request (put, signal,
// flush) into the FIFO of a host proxy service, and the proxy's thread does the work (here: a
// copy-engine copy over CUDA IPC, then a write of the peer's semaphore counter).
//
// Each rank registers one buffer of 2 x 128 MiB and sends its descriptor to the peer; rank r owns
// bytes [r*copyBytes, (r+1)*copyBytes). The proxy service gets the semaphore, this rank's memory
// (the source) and the peer's (the destination) and makes the channel. In each iteration:
//
//     GPU 0                              GPU 1
//     signal() -----------------------> wait()       both sides are in the loop
//     wait()   <----------------------- signal()
//     putWithSignal([0, n)) ----------> wait()       data, then the signal that it landed
//     wait()   <----------------------- putWithSignal([n, 2n))
//
// For copyBytes = 1 KiB, 1 MiB and 128 MiB it times the iterations and then checks every byte
// that arrived from the peer (and that its own half is untouched).
//
// Run with two ranks (rank r uses GPU r % deviceCount; ranks beyond 1 leave at once):
//   mpirun -np 2 ... ./bidir_port_channel
// Rank 0 prints one line per size and "Succeed!"; every rank exits 0 on success.

#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "../../common/example_util.h"

using example::kMaxSpins;

namespace {

constexpr uint64_t kMaxCopyBytes = 128ull << 20;
constexpr int kWarmupIterations = 5;
constexpr int kIterations = 50;
constexpr uint8_t kPoison = 0xEE;
constexpr uint32_t kDataKind = 4;  // pattern seeds: makeSeed(kDataKind, sender, size index)

// One thread drives the channel. Both sides' kernels run this loop against each other.
__global__ void bidirPutKernel(mscclppPortChannelDeviceHandle* chan, int rank, uint64_t copyBytes, int iterations) {
  if (threadIdx.x + blockIdx.x * blockDim.x != 0) return;
  const uint64_t offset = rank * copyBytes;  // the same range on both sides
  for (int i = 0; i < iterations; ++i) {
    chan->signal();          // "I am here" ...
    chan->wait(kMaxSpins);   // ... and so is the peer
    chan->putWithSignal(/*dstOffset*/ offset, /*srcOffset*/ offset, copyBytes);
    chan->wait(kMaxSpins);   // the peer's data has landed here
  }
  chan->flush(kMaxSpins);    // our own requests are complete: the source may be changed
}

}  // namespace

int main(int argc, char** argv) {
  int nranks = 0;
  const int rank = example::startMpi(&argc, &argv, "bidir_port_channel", &nranks);
  // The tutorial is between ranks 0 and 1; further ranks (one per extra GPU) only leave.
  MPI_Comm pair = example::pairOfRanks(rank, nranks);
  if (pair == MPI_COMM_NULL) {
    MPI_Finalize();
    return 0;
  }
  nranks = 2;
  const int peer = 1 - rank;

  int deviceCount = 0;
  CHECK_CUDA(cudaGetDeviceCount(&deviceCount));
  if (deviceCount < 1) example::fail("no GPU");
  const int gpu = rank % deviceCount;
  example::g_id.device = gpu;
  CHECK_CUDA(cudaSetDevice(gpu));
  std::printf("GPU %d: Preparing for tests ...\n", gpu);

  // Bootstrap from rank 0's unique id, a context and a communicator over them.
  mscclppUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (rank == 0) CHECK_MSCCLPP(mscclppBootstrapCreateUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, pair);
  mscclppBootstrap_t bootstrap = nullptr;
  CHECK_MSCCLPP(mscclppBootstrapCreateFromId(&bootstrap, rank, nranks, id));
  mscclppContext_t ctx = nullptr;
  CHECK_MSCCLPP(mscclppContextCreate(&ctx));
  mscclppCommunicator_t comm = nullptr;
  CHECK_MSCCLPP(mscclppCommunicatorCreate(bootstrap, ctx, &comm));

  // The buffer: both halves, registered for CUDA IPC.
  const uint64_t bufferBytes = 2 * kMaxCopyBytes;
  uint8_t* buffer = nullptr;
  CHECK_CUDA(cudaMalloc(&buffer, bufferBytes));
  CHECK_CUDA(cudaMemset(buffer, 0, bufferBytes));
  CHECK_CUDA(cudaDeviceSynchronize());
  mscclppRegMem_t localMem = nullptr;
  CHECK_MSCCLPP(mscclppRegisterMemory(ctx, buffer, bufferBytes, mscclppTransportP2P, &localMem));

  // Start everything at once (the futures complete as the peer makes the mirror calls).
  const int tag = 0;
  mscclppFuture_t connFuture = nullptr, sendFuture = nullptr, recvFuture = nullptr, semaFuture = nullptr;
  CHECK_MSCCLPP(mscclppCommunicatorConnect(comm, mscclppTransportP2P, gpu, peer, tag, &connFuture));
  CHECK_MSCCLPP(mscclppCommunicatorSendMemory(comm, localMem, peer, tag, &sendFuture));
  CHECK_MSCCLPP(mscclppCommunicatorRecvMemory(comm, peer, tag, &recvFuture));
  mscclppConnection_t conn = nullptr;
  CHECK_MSCCLPP(mscclppFutureGetConnection(connFuture, &conn));
  CHECK_MSCCLPP(mscclppCommunicatorBuildSemaphore(comm, conn, peer, tag, &semaFuture));
  mscclppRegMem_t remoteMem = nullptr;
  CHECK_MSCCLPP(mscclppFutureGetMemory(recvFuture, &remoteMem));
  CHECK_MSCCLPP(mscclppFutureWait(sendFuture));
  mscclppSemaphore_t sema = nullptr;
  CHECK_MSCCLPP(mscclppFutureGetSemaphore(semaFuture, &sema));
  for (mscclppFuture_t f : {connFuture, sendFuture, recvFuture, semaFuture}) CHECK_MSCCLPP(mscclppFutureDestroy(f));

  // The peer's buffer has the size the peer registered. (On one host it is mapped here; across
  // hosts the port channel reaches it through the connection and its address here is NULL.)
  void* remotePtr = nullptr;
  size_t remoteSize = 0;
  CHECK_MSCCLPP(mscclppMemoryData(remoteMem, &remotePtr, &remoteSize));
  if (remoteSize != bufferBytes) {
    example::fail("the peer's memory has %zu bytes, expected %llu bytes", remoteSize,
                  static_cast<unsigned long long>(bufferBytes));
  }

  // The proxy service: register the semaphore and both memories, then make the channel that
  // copies from this rank's memory (src) to the peer's (dst).
  mscclppProxyService_t proxy = nullptr;
  CHECK_MSCCLPP(mscclppProxyServiceCreate(0, &proxy));  // 0: the default FIFO size
  uint32_t semaId = 0, localMemId = 0, remoteMemId = 0;
  CHECK_MSCCLPP(mscclppProxyServiceAddSemaphore(proxy, sema, &semaId));
  CHECK_MSCCLPP(mscclppProxyServiceAddMemory(proxy, localMem, &localMemId));
  CHECK_MSCCLPP(mscclppProxyServiceAddMemory(proxy, remoteMem, &remoteMemId));
  mscclppPortChannelDeviceHandle handle;
  CHECK_MSCCLPP(mscclppProxyServicePortChannel(proxy, semaId, /*dst*/ remoteMemId, /*src*/ localMemId, &handle));
  mscclppPortChannelDeviceHandle* devHandle = nullptr;
  CHECK_CUDA(cudaMalloc(&devHandle, sizeof(handle)));
  CHECK_CUDA(cudaMemcpy(devHandle, &handle, sizeof(handle), cudaMemcpyHostToDevice));
  CHECK_MSCCLPP(mscclppProxyServiceStart(proxy));  // before any kernel uses the channel

  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t start = nullptr, stop = nullptr;
  CHECK_CUDA(cudaEventCreate(&start));
  CHECK_CUDA(cudaEventCreate(&stop));
  example::CheckResult* devCheck = nullptr;
  CHECK_CUDA(cudaMalloc(&devCheck, sizeof(example::CheckResult)));

  bool ok = true;
  const std::vector<uint64_t> sizes = {1024, 1ull << 20, kMaxCopyBytes};
  for (size_t k = 0; k < sizes.size(); ++k) {
    const uint64_t copyBytes = sizes[k];
    const uint32_t mySeed = example::makeSeed(kDataKind, rank, static_cast<uint32_t>(k));
    const uint32_t peerSeed = example::makeSeed(kDataKind, peer, static_cast<uint32_t>(k));
    uint8_t* myHalf = buffer + rank * copyBytes;
    uint8_t* peerHalf = buffer + peer * copyBytes;

    // New data in our half, poison where the peer's will land. The peer writes nothing before
    // both kernels have met (the first signal/wait), so this cannot race with it.
    example::launchFill(myHalf, copyBytes, mySeed, stream);
    CHECK_CUDA(cudaMemsetAsync(peerHalf, kPoison, copyBytes, stream));
    example::waitStream(gpu, stream, "filling the buffer");
    MPI_Barrier(pair);

    const std::string what = "bidirPutKernel, " + example::sizeText(copyBytes);
    bidirPutKernel<<<1, 1, 0, stream>>>(devHandle, rank, copyBytes, kWarmupIterations);
    CHECK_LAUNCH();
    example::waitStream(gpu, stream, what + " (warm-up)");
    MPI_Barrier(pair);
    CHECK_CUDA(cudaEventRecord(start, stream));
    bidirPutKernel<<<1, 1, 0, stream>>>(devHandle, rank, copyBytes, kIterations);
    CHECK_LAUNCH();
    CHECK_CUDA(cudaEventRecord(stop, stream));
    example::waitStream(gpu, stream, what);

    float ms = 0;
    CHECK_CUDA(cudaEventElapsedTime(&ms, start, stop));
    const double msPerIter = ms / kIterations;
    const double gbps = copyBytes / (msPerIter * 1e-3) / 1e9;

    // Every byte from the peer, and our own half unchanged (the peer must not write there).
    example::launchCheck(peerHalf, copyBytes, peerSeed, devCheck, stream);
    example::waitStream(gpu, stream, "checking the received data");
    const example::CheckResult fromPeer = example::readCheck(devCheck);
    example::launchCheck(myHalf, copyBytes, mySeed, devCheck, stream);
    example::waitStream(gpu, stream, "checking the sent data");
    const example::CheckResult own = example::readCheck(devCheck);

    if (rank == 0) {
      std::printf("GPU %d: [Bidir PutWithSignal] bytes %llu, elapsed %g ms/iter, BW %g GB/s\n", gpu,
                  static_cast<unsigned long long>(copyBytes), msPerIter, gbps);
    }
    if (fromPeer.wrong != 0) {
      ok = false;
      uint8_t got = 0;
      CHECK_CUDA(cudaMemcpy(&got, peerHalf + fromPeer.firstWrong, 1, cudaMemcpyDeviceToHost));
      std::printf("%sbytes %llu: %llu of the bytes from GPU %d are wrong, the first at offset %llu of its range "
                  "(got 0x%02x%s, want 0x%02x)\n",
                  example::failPrefix().c_str(), static_cast<unsigned long long>(copyBytes), fromPeer.wrong,
                  peer % deviceCount, fromPeer.firstWrong, got, got == kPoison ? ": never written" : "",
                  example::patternByte(peerSeed, fromPeer.firstWrong));
    }
    if (own.wrong != 0) {
      ok = false;
      std::printf("%sbytes %llu: %llu bytes of this rank's own range changed, the first at offset %llu\n",
                  example::failPrefix().c_str(), static_cast<unsigned long long>(copyBytes), own.wrong,
                  own.firstWrong);
    }
    std::fflush(stdout);
  }

  // Both kernels are done and flushed; meet, then tear down.
  MPI_Barrier(pair);
  CHECK_MSCCLPP(mscclppBootstrapBarrierAll(bootstrap));
  CHECK_MSCCLPP(mscclppProxyServiceStop(proxy));
  CHECK_MSCCLPP(mscclppProxyServiceDestroy(proxy));
  CHECK_CUDA(cudaEventDestroy(start));
  CHECK_CUDA(cudaEventDestroy(stop));
  CHECK_CUDA(cudaStreamDestroy(stream));
  CHECK_CUDA(cudaFree(devCheck));
  CHECK_CUDA(cudaFree(devHandle));
  CHECK_MSCCLPP(mscclppSemaphoreDestroy(sema));
  CHECK_MSCCLPP(mscclppMemoryRelease(remoteMem));
  CHECK_MSCCLPP(mscclppMemoryRelease(localMem));
  CHECK_MSCCLPP(mscclppConnectionRelease(conn));
  CHECK_MSCCLPP(mscclppCommunicatorDestroy(comm));
  CHECK_MSCCLPP(mscclppContextDestroy(ctx));
  CHECK_MSCCLPP(mscclppBootstrapDestroy(bootstrap));
  CHECK_CUDA(cudaFree(buffer));

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
