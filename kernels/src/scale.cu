// scale.cu: dst[i] = src[i] * scalar, element-wise on this rank's GPU (no peer is involved), for
// every type the reducing kernels take. NCCL's PreMulSum operators are this followed by a sum.
//
// The scalar is a kernel argument (its bits) or, when scalarPtr is set, the element there in
// device memory, read when the kernel runs (so a CUDA graph replay reads the value it holds
// then). The product is NCCL's: integers wrap (computed in unsigned arithmetic of at least 32
// bits and truncated back), float16 and bfloat16 multiply in float and round once to the type
// (their product is exact in float, so this is the correctly rounded product), float32 and
// float64 in their own precision. Nothing here touches coll::State: a Scale between collectives
// changes none of their sequencing.
#include "common.cuh"

namespace coll {

// Block size; must equal collectives.scaleThreads.
constexpr uint32_t kScaleThreads = 512;
// 16-byte words each thread loads before it stores any.
constexpr int kScaleUnroll = 4;

// The one kernel parameter. Mirrored by collectives.scaleArgs (8-byte fields only).
struct ScaleArgs {
  const void* src;        // count elements
  void* dst;              // count elements; may be src (in place)
  uint64_t count;         // elements
  uint64_t scalar;        // the factor's bits in its low sizeof(T) bytes, when scalarPtr is NULL
  const void* scalarPtr;  // the factor in device memory, read by the kernel; NULL: use scalar
};
static_assert(sizeof(ScaleArgs) == 40, "ScaleArgs is mirrored by collectives.scaleArgs");

// x * s as NCCL's PreMulSum computes it (see above).
template <typename T>
__device__ __forceinline__ T multiply(T x, T s) {
  if constexpr (std::is_same<T, __half>::value) {
    return __float2half(__half2float(x) * __half2float(s));
  } else if constexpr (std::is_same<T, __nv_bfloat16>::value) {
    return __float2bfloat16(__bfloat162float(x) * __bfloat162float(s));
  } else if constexpr (std::is_integral<T>::value) {
    using Wide = typename std::conditional<sizeof(T) == 8, uint64_t, uint32_t>::type;
    return T(Wide(x) * Wide(s));
  } else {
    return x * s;
  }
}

// Every lane of the 16-byte word w multiplied by s.
template <typename T>
__device__ __forceinline__ uint4 multiplyWord(uint4 w, T s) {
  T* x = reinterpret_cast<T*>(&w);
#pragma unroll
  for (int i = 0; i < int(sizeof(uint4) / sizeof(T)); ++i) x[i] = multiply(x[i], s);
  return w;
}

template <typename T>
__device__ __forceinline__ void scale(const ScaleArgs& a) {
  T s;
  if (a.scalarPtr != nullptr) {
    s = *static_cast<const T*>(a.scalarPtr);
  } else {
    memcpy(&s, &a.scalar, sizeof(T));  // the low bytes: the host wrote the value little-endian
  }
  const T* src = static_cast<const T*>(a.src);
  T* dst = static_cast<T*>(a.dst);
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint64_t nThreads = uint64_t(gridDim.x) * blockDim.x;
  uint64_t done = 0;
  if (aligned(src, 16) && aligned(dst, 16)) {
    constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
    const uint64_t words = a.count / kVec;
    const uint4* in = reinterpret_cast<const uint4*>(src);
    uint4* out = reinterpret_cast<uint4*>(dst);
    uint64_t w = tid;
    for (; w + (kScaleUnroll - 1) * nThreads < words; w += kScaleUnroll * nThreads) {
      uint4 v[kScaleUnroll];
#pragma unroll
      for (int k = 0; k < kScaleUnroll; ++k) v[k] = in[w + k * nThreads];
#pragma unroll
      for (int k = 0; k < kScaleUnroll; ++k) out[w + k * nThreads] = multiplyWord(v[k], s);
    }
    for (; w < words; w += nThreads) out[w] = multiplyWord(in[w], s);
    done = words * kVec;
  }
  for (uint64_t e = done + tid; e < a.count; e += nThreads) dst[e] = multiply(src[e], s);
}

}  // namespace coll

// Entry points for the ten element types, suffixed as collectives.DataType.kernelSuffix.
#define COLL_SCALE_ENTRY(SUFFIX, T)                                                                    \
  extern "C" __global__ void __launch_bounds__(coll::kScaleThreads) mscclpp_scale_##SUFFIX(const coll::ScaleArgs args) { \
    coll::scale<T>(args);                                                                              \
  }
COLL_SCALE_ENTRY(f32, float)
COLL_SCALE_ENTRY(f16, __half)
COLL_SCALE_ENTRY(bf16, __nv_bfloat16)
COLL_SCALE_ENTRY(i32, int32_t)
COLL_SCALE_ENTRY(u32, uint32_t)
COLL_SCALE_ENTRY(f64, double)
COLL_SCALE_ENTRY(i8, int8_t)
COLL_SCALE_ENTRY(u8, uint8_t)
COLL_SCALE_ENTRY(i64, int64_t)
COLL_SCALE_ENTRY(u64, uint64_t)
