// common.cuh: what the GPU test programs of tests/gpu share, written only against the public
// headers: the rank's globals, the fatal-error macros, the element types' traits, a group of
// checks counted over the ranks, and one rank's communicator stack (bootstrap, context,
// communicator, collective communicator) with the unique id passed through MPI.
#ifndef MSCCLPP_TESTS_GPU_COMMON_CUH_
#define MSCCLPP_TESTS_GPU_COMMON_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <mpi.h>
#include <mscclpp/collectives.h>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

int g_rank = 0, g_nranks = 1;
int g_passed = 0, g_failed = 0;

void fatal(const char* what, const char* detail) {
  std::fprintf(stderr, "[rank %d] FATAL %s: %s\n", g_rank, what, detail);
  MPI_Abort(MPI_COMM_WORLD, 2);
}
#define CUDA(call)                                                   \
  do {                                                               \
    cudaError_t e_ = (call);                                         \
    if (e_ != cudaSuccess) fatal(#call, cudaGetErrorString(e_));     \
  } while (0)
#define MSCCLPP(call)                                                \
  do {                                                               \
    mscclppResult_t r_ = (call);                                     \
    if (r_ != mscclppSuccess) fatal(#call, mscclppGetErrorString(r_)); \
  } while (0)

// ---- Types -------------------------------------------------------------------------------------

template <typename T> struct Type;
template <> struct Type<float> {
  static constexpr mscclppDataType_t id = mscclppFloat32;
  static constexpr const char* name = "float32";
  static float from(double v) { return static_cast<float>(v); }
  static double to(float v) { return v; }
};
template <> struct Type<double> {
  static constexpr mscclppDataType_t id = mscclppFloat64;
  static constexpr const char* name = "float64";
  static double from(double v) { return v; }
  static double to(double v) { return v; }
};
template <> struct Type<__half> {
  static constexpr mscclppDataType_t id = mscclppFloat16;
  static constexpr const char* name = "float16";
  static __half from(double v) { return __float2half(static_cast<float>(v)); }
  static double to(__half v) { return __half2float(v); }
};
template <> struct Type<__nv_bfloat16> {
  static constexpr mscclppDataType_t id = mscclppBfloat16;
  static constexpr const char* name = "bfloat16";
  static __nv_bfloat16 from(double v) { return __float2bfloat16(static_cast<float>(v)); }
  static double to(__nv_bfloat16 v) { return __bfloat162float(v); }
};
// The integer types convert with static_cast both ways.
template <typename T, mscclppDataType_t Id>
struct IntegerType {
  static constexpr mscclppDataType_t id = Id;
  static T from(double v) { return static_cast<T>(v); }
  static double to(T v) { return static_cast<double>(v); }
};
template <> struct Type<int32_t> : IntegerType<int32_t, mscclppInt32> { static constexpr const char* name = "int32"; };
template <> struct Type<uint32_t> : IntegerType<uint32_t, mscclppUint32> { static constexpr const char* name = "uint32"; };
template <> struct Type<int64_t> : IntegerType<int64_t, mscclppInt64> { static constexpr const char* name = "int64"; };
template <> struct Type<uint64_t> : IntegerType<uint64_t, mscclppUint64> { static constexpr const char* name = "uint64"; };
template <> struct Type<int8_t> : IntegerType<int8_t, mscclppInt8> { static constexpr const char* name = "int8"; };
template <> struct Type<uint8_t> : IntegerType<uint8_t, mscclppUint8> { static constexpr const char* name = "uint8"; };
// The fp8 types only move (AllGather, Broadcast): their bytes are compared, as unsigned integers.
template <mscclppDataType_t Id> struct Fp8 {
  uint8_t bits;
};
using Fp8E4M3 = Fp8<mscclppFloat8e4m3>;
using Fp8E5M2 = Fp8<mscclppFloat8e5m2>;
template <mscclppDataType_t Id> struct Type<Fp8<Id>> {
  static constexpr mscclppDataType_t id = Id;
  static constexpr const char* name = Id == mscclppFloat8e4m3 ? "float8e4m3" : "float8e5m2";
  static Fp8<Id> from(double v) { return {static_cast<uint8_t>(v)}; }
  static double to(Fp8<Id> v) { return v.bits; }
};

struct Group {
  std::string name;
  long checks = 0, failures = 0;
  explicit Group(std::string n) : name(std::move(n)) {}
  void fail(const std::string& what) {
    if (failures++ < 5) std::printf("[rank %d] FAIL %s: %s\n", g_rank, name.c_str(), what.c_str());
  }
  // Reduces the counts over ranks, prints the group's line on rank 0 and counts it.
  void finish() {
    long local[2] = {checks, failures}, total[2];
    MPI_Allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) std::printf("%s %s: %ld checks over %d ranks, %ld failed\n", total[1] ? "FAIL" : "ok  ", name.c_str(), total[0], g_nranks, total[1]);
    std::fflush(stdout);
    (total[1] ? g_failed : g_passed)++;
  }
};

struct Comm {
  mscclppBootstrap_t bootstrap = nullptr;
  mscclppContext_t context = nullptr;
  mscclppCommunicator_t communicator = nullptr;
  mscclppCollComm_t coll = nullptr;
  Comm() {
    mscclppUniqueId id;
    if (g_rank == 0) MSCCLPP(mscclppBootstrapCreateUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    MSCCLPP(mscclppBootstrapCreateFromId(&bootstrap, g_rank, g_nranks, id));
    MSCCLPP(mscclppContextCreate(&context));
    MSCCLPP(mscclppCommunicatorCreate(bootstrap, context, &communicator));
    MSCCLPP(mscclppCollCommCreate(communicator, -1, &coll));
  }
  ~Comm() {
    MSCCLPP(mscclppCollCommDestroy(coll));
    MSCCLPP(mscclppCommunicatorDestroy(communicator));
    MSCCLPP(mscclppContextDestroy(context));
    MSCCLPP(mscclppBootstrapDestroy(bootstrap));
  }
};

}  // namespace

#endif  // MSCCLPP_TESTS_GPU_COMMON_CUH_
