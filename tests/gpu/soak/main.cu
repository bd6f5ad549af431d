// soak: many AllReduce and AllGather calls of mixed sizes, types, placements and buffers, every
// result checked on the GPU, and the number of wrong elements printed at the end (it must be 0).
//
//   mpirun -np N ./soak [calls]              # collectives.h (default 100000 calls)
//   mpirun -np N ./soak_nccl [calls]         # the same calls through the NCCL API (built with
//                                            # -DSOAK_NCCL against include/mscclpp_nccl/nccl.h)
//
// Every rank draws the same sequence of calls from one seed (SOAK_SEED, default 1): the
// collective (AllReduce sum or AllGather, half each), the type (float32, float16, bfloat16,
// float64, int32, int8, uint8), the size (log-uniform from 8 B to 64 MiB of output, a whole number
// of elements), in place or not, and the buffers: a registered arena (zero-copy algorithms) or
// plain cudaMalloc memory (the scratch algorithms), so that the library's size- and
// registration-based choices all run. The algorithms are those the library picks; forcing one
// through MSCCLPP_ALLREDUCE_ALGO / MSCCLPP_ALLGATHER_ALGO works too. Per call, on one stream with
// no host synchronisation: a kernel fills the input (small integers that every type holds exactly,
// and whose sums over up to 16 ranks too), the collective, and a kernel that compares the whole
// output with what it must be and counts wrong elements in device memory. Every 1000 calls the
// host synchronises and reads the count and the communicator's asynchronous error.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mpi.h>

#ifdef SOAK_NCCL
#include <nccl.h>
#endif

#include "../common.cuh"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr size_t kMaxBytes = size_t(64) << 20;  // the largest output of a call
constexpr int kSyncEvery = 1000;               // calls between two host checks
constexpr int kMaxRanks = 16;                  // sums of up to this many ranks stay exact in int8

enum Kind : int { kF32, kF16, kBf16, kF64, kI32, kI8, kU8, kKinds };
const char* const kKindNames[kKinds] = {"float32", "float16", "bfloat16", "float64", "int32", "int8", "uint8"};
const size_t kKindBytes[kKinds] = {4, 2, 2, 8, 4, 1, 1};

// Rank r's element i of call `salt`: 0 to 7, so that sums over kMaxRanks ranks stay below 128.
__host__ __device__ inline int value(int r, size_t i, uint32_t salt) {
  return static_cast<int>((i * 7 + static_cast<size_t>(r) * 3 + salt) & 7);
}

template <typename T>
__device__ inline T fromInt(int v) {
  return static_cast<T>(v);
}
template <>
__device__ inline __half fromInt<__half>(int v) {
  return __int2half_rn(v);
}
template <>
__device__ inline __nv_bfloat16 fromInt<__nv_bfloat16>(int v) {
  return __int2bfloat16_rn(v);
}
template <typename T>
__device__ inline int toInt(T v) {
  return static_cast<int>(v);
}
template <>
__device__ inline int toInt<__half>(__half v) {
  return __half2int_rn(v);
}
template <>
__device__ inline int toInt<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162int_rn(v);
}

template <typename T>
__global__ void fill(T* buf, size_t n, int rank, uint32_t salt) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    buf[i] = fromInt<T>(value(rank, i, salt));
  }
}

// Counts the wrong elements of an output of n elements: an AllReduce sum of `count` elements over
// nRanks (n == count), or an AllGather of `count` elements per rank (n == count * nRanks).
template <typename T>
__global__ void check(const T* out, size_t n, size_t count, int nRanks, bool gather, uint32_t salt,
                      unsigned long long* wrong) {
  unsigned long long bad = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    int want = 0;
    if (gather) {
      want = value(static_cast<int>(i / count), i % count, salt);
    } else {
      for (int r = 0; r < nRanks; ++r) want += value(r, i, salt);
    }
    bad += toInt(out[i]) != want;
  }
  if (bad) atomicAdd(wrong, bad);
}

struct Rng {  // splitmix64: the same sequence on every rank
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// One call, drawn from the sequence.
struct Call {
  bool gather;
  Kind kind;
  size_t count;  // elements of input per rank (AllReduce: of the whole buffer)
  bool inPlace;
  bool registered;
};

Call draw(Rng& rng, int nRanks) {
  Call c;
  c.gather = rng.next() & 1;
  c.kind = static_cast<Kind>(rng.next() % kKinds);
  const double lg = 3 + static_cast<double>(rng.next() % 1000001) / 1000000 * 23;  // 2^3 .. 2^26 bytes
  size_t outBytes = static_cast<size_t>(std::exp2(lg));
  size_t outCount = outBytes / kKindBytes[c.kind];
  if (outCount < size_t(nRanks)) outCount = nRanks;
  c.count = c.gather ? outCount / nRanks : outCount;
  c.inPlace = rng.next() & 1;
  c.registered = rng.next() & 1;
  return c;
}

#ifdef SOAK_NCCL
#define NCCL(call)                                                          \
  do {                                                                      \
    ncclResult_t r_ = (call);                                               \
    if (r_ != ncclSuccess) fatal(#call, ncclGetErrorString(r_));            \
  } while (0)
const ncclDataType_t kTypes[kKinds] = {ncclFloat32, ncclFloat16, ncclBfloat16, ncclFloat64, ncclInt32, ncclInt8, ncclUint8};
#else
const mscclppDataType_t kTypes[kKinds] = {mscclppFloat32, mscclppFloat16, mscclppBfloat16, mscclppFloat64,
                                          mscclppInt32,   mscclppInt8,    mscclppUint8};
#endif

template <typename T>
void launchFill(char* buf, size_t n, int rank, uint32_t salt, cudaStream_t s) {
  fill<T><<<256, 256, 0, s>>>(reinterpret_cast<T*>(buf), n, rank, salt);
}
template <typename T>
void launchCheck(const char* out, size_t n, size_t count, bool gather, uint32_t salt, unsigned long long* wrong,
                 cudaStream_t s) {
  check<T><<<256, 256, 0, s>>>(reinterpret_cast<const T*>(out), n, count, g_nranks, gather, salt, wrong);
}
#define SOAK_DISPATCH(kind, FN, ...)                          \
  switch (kind) {                                             \
    case kF32: FN<float>(__VA_ARGS__); break;                 \
    case kF16: FN<__half>(__VA_ARGS__); break;                \
    case kBf16: FN<__nv_bfloat16>(__VA_ARGS__); break;        \
    case kF64: FN<double>(__VA_ARGS__); break;                \
    case kI32: FN<int32_t>(__VA_ARGS__); break;               \
    case kI8: FN<int8_t>(__VA_ARGS__); break;                 \
    default: FN<uint8_t>(__VA_ARGS__); break;                 \
  }

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_nranks);
  if (g_nranks > kMaxRanks) fatal("soak", "at most 16 ranks (the sums must stay exact in int8)");
  const long calls = argc > 1 ? std::atol(argv[1]) : 100000;
  const char* seedEnv = std::getenv("SOAK_SEED");
  Rng rng{seedEnv ? std::strtoull(seedEnv, nullptr, 10) : 1};
  int devices = 0;
  CUDA(cudaGetDeviceCount(&devices));
  CUDA(cudaSetDevice(g_rank % devices));
  cudaStream_t s;
  CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // Two pairs of send and receive buffers: one carved out of a registered arena, one plain.
  char *arena = nullptr, *plainSend = nullptr, *plainRecv = nullptr;
  CUDA(cudaMalloc(&arena, 2 * kMaxBytes));
  CUDA(cudaMalloc(&plainSend, kMaxBytes));
  CUDA(cudaMalloc(&plainRecv, kMaxBytes));
  unsigned long long* wrong = nullptr;
  CUDA(cudaMalloc(&wrong, sizeof *wrong));
  CUDA(cudaMemset(wrong, 0, sizeof *wrong));
#ifdef SOAK_NCCL
  ncclUniqueId id;
  if (g_rank == 0) NCCL(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclComm_t comm;
  NCCL(ncclCommInitRank(&comm, g_nranks, id, g_rank));
  void* regHandle = nullptr;
  NCCL(ncclCommRegister(comm, arena, 2 * kMaxBytes, &regHandle));
  const char* api = "the NCCL API";
#else
  Comm* c = new Comm;
  mscclppCollRegistration_t reg = nullptr;
  MSCCLPP(mscclppCollRegister(c->coll, arena, 2 * kMaxBytes, &reg));
  const char* api = "collectives.h";
#endif

  long nGather = 0, nReduce = 0, nRegistered = 0, nInPlace = 0;
  double bytesMoved = 0;
  unsigned long long seenWrong = 0;
  long firstWrongBefore = -1;  // the call count at the first host check that saw wrong elements
  const double start = MPI_Wtime();
  for (long i = 0; i < calls; ++i) {
    const Call call = draw(rng, g_nranks);
    const uint32_t salt = static_cast<uint32_t>(i);
    const size_t elt = kKindBytes[call.kind];
    const size_t outCount = call.gather ? call.count * g_nranks : call.count;
    char* send = call.registered ? arena : plainSend;
    char* recv = call.registered ? arena + kMaxBytes : plainRecv;
    if (call.inPlace) send = call.gather ? recv + g_rank * call.count * elt : recv;
    SOAK_DISPATCH(call.kind, launchFill, send, call.count, g_rank, salt, s);
#ifdef SOAK_NCCL
    if (call.gather) {
      NCCL(ncclAllGather(send, recv, call.count, kTypes[call.kind], comm, s));
    } else {
      NCCL(ncclAllReduce(send, recv, call.count, kTypes[call.kind], ncclSum, comm, s));
    }
#else
    if (call.gather) {
      MSCCLPP(mscclppAllGather(send, recv, call.count, kTypes[call.kind], c->coll, s));
    } else {
      MSCCLPP(mscclppAllReduce(send, recv, call.count, kTypes[call.kind], mscclppSum, c->coll, s));
    }
#endif
    SOAK_DISPATCH(call.kind, launchCheck, recv, outCount, call.count, call.gather, salt, wrong, s);
    (call.gather ? nGather : nReduce)++;
    nRegistered += call.registered;
    nInPlace += call.inPlace;
    bytesMoved += double(outCount * elt);
    if ((i + 1) % kSyncEvery == 0 || i + 1 == calls) {
      CUDA(cudaStreamSynchronize(s));
      unsigned long long w = 0;
      CUDA(cudaMemcpy(&w, wrong, sizeof w, cudaMemcpyDeviceToHost));
      if (w != seenWrong && firstWrongBefore < 0) firstWrongBefore = i + 1;
      seenWrong = w;
#ifdef SOAK_NCCL
      ncclResult_t asyncErr = ncclSuccess;
      NCCL(ncclCommGetAsyncError(comm, &asyncErr));
      if (asyncErr != ncclSuccess) fatal("ncclCommGetAsyncError", ncclGetErrorString(asyncErr));
#else
      mscclppResult_t asyncErr = mscclppSuccess;
      char reason[256] = "";
      MSCCLPP(mscclppCollCommGetAsyncError(c->coll, &asyncErr, reason, sizeof reason));
      if (asyncErr != mscclppSuccess) fatal("mscclppCollCommGetAsyncError", reason);
#endif
    }
  }
  const double seconds = MPI_Wtime() - start;
  unsigned long long total = 0;
  MPI_Reduce(&seenWrong, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  double slowest = 0;
  MPI_Reduce(&seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (g_rank == 0) {
    std::printf("soak (%s): %ld calls on %d ranks (%ld allreduce, %ld allgather; %ld registered, %ld in place; types",
                api, calls, g_nranks, nReduce, nGather, nRegistered, nInPlace);
    for (int k = 0; k < kKinds; ++k) std::printf(" %s", kKindNames[k]);
    std::printf("; 8 B to 64 MiB), %.1f GB of output checked, %.1f s: %llu wrong elements\n", bytesMoved / 1e9, slowest,
                total);
    std::printf("%s soak\n", total == 0 ? "ok  " : "FAIL");
  }
  if (firstWrongBefore >= 0) std::printf("[rank %d] first wrong elements seen by call %ld\n", g_rank, firstWrongBefore);
#ifdef SOAK_NCCL
  NCCL(ncclCommDeregister(comm, regHandle));
  NCCL(ncclCommDestroy(comm));
#else
  MSCCLPP(mscclppCollDeregister(c->coll, reg));
  delete c;
#endif
  CUDA(cudaFree(wrong));
  CUDA(cudaFree(plainRecv));
  CUDA(cudaFree(plainSend));
  CUDA(cudaFree(arena));
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
