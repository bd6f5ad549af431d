// gpu_ping_pong: the basic concepts of the primitive API, in one process that drives two GPUs.
//
//   endpoint   describes one side (here: GPU 0 and GPU 1, transport P2P = CUDA IPC / peer access);
//   connection one per side, from its own endpoint to the other one;
//   semaphore  built from two semaphore stubs, one per side; each side has its own semaphore;
//   channel    a BaseMemoryChannel only synchronises (no data); its device handle goes to the GPU.
//
// GPU 0 waits for a signal, spins about 1e7 cycles (a few ms) and signals back; GPU 1 signals and
// waits. After 100 rounds GPU 1 must have seen every round take longer than 1 ms: a wait that
// returned without the peer's signal would make a round short.
//
// Build and run (no MPI; needs two GPUs with peer access), see ../README.md:
//   nvcc -std=c++17 -O2 -arch=sm_90 -Ibuild/include main.cu -o gpu_ping_pong -Lbuild/lib -lmscclpp ...
//   ./gpu_ping_pong
// Exit code 0 and "Succeed!" on success.
#include <cstdio>

#include "../../common/example_util.h"

using example::kMaxSpins;

namespace {

constexpr int kIterations = 100;
constexpr long long kSpinCycles = 10000000;     // GPU 0's work per round: ~5 ms at 2 GHz
constexpr uint64_t kMinRoundNs = 1000000;       // every round GPU 1 sees must be longer than 1 ms

// GPU 0: wait for GPU 1's signal, "work", answer.
__global__ void gpuKernel0(mscclppBaseMemoryChannelDeviceHandle* chan, int iterations) {
  if (threadIdx.x + blockIdx.x * blockDim.x != 0) return;
  for (int i = 0; i < iterations; ++i) {
    chan->relaxedWait(kMaxSpins);
    example::spinCycles(kSpinCycles);
    chan->relaxedSignal();
  }
}

// GPU 1: signal, wait for the answer; records the shortest round (global timer, ns).
__global__ void gpuKernel1(mscclppBaseMemoryChannelDeviceHandle* chan, int iterations, uint64_t* shortestRoundNs) {
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

}  // namespace

int main() {
  example::g_id.program = "gpu_ping_pong";

  int deviceCount = 0;
  CHECK_CUDA(cudaGetDeviceCount(&deviceCount));
  if (deviceCount < 2) {
    std::printf("SKIP gpu_ping_pong: at least two GPUs are required, found %d\n", deviceCount);
    return example::kExitSkipped;
  }
  int canAccess = 0;
  CHECK_CUDA(cudaDeviceCanAccessPeer(&canAccess, 0, 1));
  if (!canAccess) {
    std::printf("GPU 0 cannot access GPU 1\n");
    return 1;
  }
  CHECK_CUDA(cudaDeviceCanAccessPeer(&canAccess, 1, 0));
  if (!canAccess) {
    std::printf("GPU 1 cannot access GPU 0\n");
    return 1;
  }

  // The context owns the connections and the memory behind the semaphores.
  mscclppContext_t ctx = nullptr;
  CHECK_MSCCLPP(mscclppContextCreate(&ctx));

  // One endpoint per GPU, both on the same transport. The endpoints are plain bytes: in a
  // multi-process program they would be sent to the peer (see gpu_ping_pong_mp).
  std::printf("Creating endpoints ...\n");
  const mscclppTransport_t transport = mscclppTransportP2P;
  mscclppEndpoint ep0, ep1;
  CHECK_MSCCLPP(mscclppEndpointCreate(ctx, transport, mscclppDeviceGPU, 0, &ep0));
  CHECK_MSCCLPP(mscclppEndpointCreate(ctx, transport, mscclppDeviceGPU, 1, &ep1));

  // A connection is one-sided: each side connects its own endpoint to the other one. The stub is
  // this side's share of a semaphore (its inbound counter, in this side's GPU memory).
  std::printf("GPU 0: Creating a connection and a semaphore stub ...\n");
  CHECK_CUDA(cudaSetDevice(0));
  mscclppConnection_t conn0 = nullptr;
  mscclppSemaphoreStub stub0;
  CHECK_MSCCLPP(mscclppContextConnect(ctx, /*local*/ &ep0, /*remote*/ &ep1, &conn0));
  CHECK_MSCCLPP(mscclppSemaphoreStubCreate(conn0, &stub0));

  std::printf("GPU 1: Creating a connection and a semaphore stub ...\n");
  CHECK_CUDA(cudaSetDevice(1));
  mscclppConnection_t conn1 = nullptr;
  mscclppSemaphoreStub stub1;
  CHECK_MSCCLPP(mscclppContextConnect(ctx, /*local*/ &ep1, /*remote*/ &ep0, &conn1));
  CHECK_MSCCLPP(mscclppSemaphoreStubCreate(conn1, &stub1));

  // Each side builds its semaphore from its own stub and the other side's, then a channel on it.
  // The device handle is plain data: copy it to GPU memory and pass the pointer to the kernel.
  std::printf("GPU 0: Creating a semaphore and a memory channel ...\n");
  CHECK_CUDA(cudaSetDevice(0));
  mscclppSemaphore_t sema0 = nullptr;
  CHECK_MSCCLPP(mscclppSemaphoreCreate(conn0, /*local*/ &stub0, /*remote*/ &stub1, &sema0));
  mscclppBaseMemoryChannelDeviceHandle handle0;
  CHECK_MSCCLPP(mscclppBaseMemoryChannelGetDeviceHandle(sema0, &handle0));
  mscclppBaseMemoryChannelDeviceHandle* devHandle0 = nullptr;
  CHECK_CUDA(cudaMalloc(&devHandle0, sizeof(handle0)));
  CHECK_CUDA(cudaMemcpy(devHandle0, &handle0, sizeof(handle0), cudaMemcpyHostToDevice));
  cudaStream_t stream0 = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream0, cudaStreamNonBlocking));

  std::printf("GPU 1: Creating a semaphore and a memory channel ...\n");
  CHECK_CUDA(cudaSetDevice(1));
  mscclppSemaphore_t sema1 = nullptr;
  CHECK_MSCCLPP(mscclppSemaphoreCreate(conn1, /*local*/ &stub1, /*remote*/ &stub0, &sema1));
  mscclppBaseMemoryChannelDeviceHandle handle1;
  CHECK_MSCCLPP(mscclppBaseMemoryChannelGetDeviceHandle(sema1, &handle1));
  mscclppBaseMemoryChannelDeviceHandle* devHandle1 = nullptr;
  CHECK_CUDA(cudaMalloc(&devHandle1, sizeof(handle1)));
  CHECK_CUDA(cudaMemcpy(devHandle1, &handle1, sizeof(handle1), cudaMemcpyHostToDevice));
  uint64_t* devShortest = nullptr;
  CHECK_CUDA(cudaMalloc(&devShortest, sizeof(uint64_t)));
  cudaStream_t stream1 = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&stream1, cudaStreamNonBlocking));
  cudaEvent_t start1 = nullptr, stop1 = nullptr;
  CHECK_CUDA(cudaEventCreate(&start1));
  CHECK_CUDA(cudaEventCreate(&stop1));

  std::printf("GPU 0: Launching gpuKernel0 ...\n");
  CHECK_CUDA(cudaSetDevice(0));
  gpuKernel0<<<1, 1, 0, stream0>>>(devHandle0, kIterations);
  CHECK_LAUNCH();

  std::printf("GPU 1: Launching gpuKernel1 ...\n");
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaEventRecord(start1, stream1));
  gpuKernel1<<<1, 1, 0, stream1>>>(devHandle1, kIterations, devShortest);
  CHECK_LAUNCH();
  CHECK_CUDA(cudaEventRecord(stop1, stream1));

  example::waitStreams({{0, stream0}, {1, stream1}}, "the ping-pong kernels");

  CHECK_CUDA(cudaSetDevice(1));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, start1, stop1));
  uint64_t shortestNs = 0;
  CHECK_CUDA(cudaMemcpy(&shortestNs, devShortest, sizeof(shortestNs), cudaMemcpyDeviceToHost));
  std::printf("Elapsed %g ms per iteration (%d)\n", ms / kIterations, kIterations);

  bool ok = true;
  if (shortestNs <= kMinRoundNs) {
    std::printf("%sGPU 1: the shortest round took %.3f ms, expected more than %.3f ms (GPU 0 spins %lld cycles "
                "per round): relaxedWait() returned before GPU 0 signalled\n",
                example::failPrefix().c_str(), shortestNs / 1e6, kMinRoundNs / 1e6, kSpinCycles);
    ok = false;
  }

  // Tear down: GPU resources, then the semaphores, the connections and the context.
  CHECK_CUDA(cudaEventDestroy(start1));
  CHECK_CUDA(cudaEventDestroy(stop1));
  CHECK_CUDA(cudaStreamDestroy(stream1));
  CHECK_CUDA(cudaFree(devShortest));
  CHECK_CUDA(cudaFree(devHandle1));
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaStreamDestroy(stream0));
  CHECK_CUDA(cudaFree(devHandle0));
  CHECK_MSCCLPP(mscclppSemaphoreDestroy(sema0));
  CHECK_MSCCLPP(mscclppSemaphoreDestroy(sema1));
  CHECK_MSCCLPP(mscclppConnectionRelease(conn0));
  CHECK_MSCCLPP(mscclppConnectionRelease(conn1));
  CHECK_MSCCLPP(mscclppContextDestroy(ctx));

  if (!ok) return 1;
  std::printf("Succeed!\n");
  return 0;
}
