// waves.cuh: the shape the copy-engine AllReduce kernels share (allreduce_rsag_port.cu,
// allreduce_port.cu). The grid is reducing blocks and one issuing block, the last. The reducing
// blocks work through the call in waves and count each wave they finish in State.waves; the
// issuing block waits on those counters and queues the copy engines' requests for every wave the
// reducing blocks have finished.
#ifndef MSCCLPP_KERNELS_WAVES_CUH_
#define MSCCLPP_KERNELS_WAVES_CUH_

#include "common.cuh"

namespace coll {

// A reducing block's thread 0 counts `waves` waves (1-based) as finished: the block's stores
// before it (the whole block's, ordered by the caller's __syncthreads) are visible to the copy
// engines first.
__device__ __forceinline__ void countWaves(const Args& a, uint32_t block, uint32_t waves) {
  __threadfence_system();
  atomicExch(&a.state->waves[block], waves);
}

// The fewest waves every one of the first nReducers blocks has counted.
__device__ __forceinline__ uint32_t leastWaves(const Args& a, uint32_t nReducers) {
  uint32_t least = 0xffffffffu;
  for (uint32_t b = 0; b < nReducers; ++b) {
    const uint32_t w = *reinterpret_cast<const volatile uint32_t*>(&a.state->waves[b]);
    least = w < least ? w : least;
  }
  return least;
}

// Waits until every one of the first nReducers blocks has counted `waves` waves; the stores the
// counters announce are then visible to the copy engines this thread asks to read them.
__device__ __forceinline__ void waitWaves(const Args& a, uint32_t nReducers, uint32_t waves) {
  waitUntil(a, [&] { return leastWaves(a, nReducers) >= waves; });
  __threadfence_system();
}

// The issuing block, every thread, at the end of a call in which it has seen every reducing block
// count every wave: the counters go back to 0 for the next call (no reducing block counts again
// in this one).
__device__ __forceinline__ void clearWaves(const Args& a, uint32_t nReducers) {
  for (uint32_t b = threadIdx.x; b < nReducers; b += blockDim.x) a.state->waves[b] = 0;
}

// The entry of a kernel of this shape: thread 0 plans the call's waves into shared memory (the
// reduction loops need every register they can get), the reducing blocks run reduce(plan), the
// last block runs issue(plan), and every block then counts itself done.
template <typename Plan, typename PlanFn, typename ReduceFn, typename IssueFn>
__device__ __forceinline__ void runWaves(const Args& a, PlanFn plan, ReduceFn reduce, IssueFn issue) {
  __shared__ Plan v;
  if (threadIdx.x == 0) v = plan();
  __syncthreads();
  if (blockIdx.x + 1 < gridDim.x) {
    reduce(v);
  } else {
    issue(v);
  }
  finishCall(a.state);
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_WAVES_CUH_
