// reduce.cuh: the element-wise reduction of several ranks' pieces, stored to several places at
// once. AllReduce's rsag kernels (inputs in the scratch) and direct kernel (inputs in the peers'
// registered buffers) share it.
#ifndef MSCCLPP_KERNELS_REDUCE_CUH_
#define MSCCLPP_KERNELS_REDUCE_CUH_

#include "common.cuh"

namespace coll {

// Reduces the 16-byte word v (and the Unroll - 1 words numThreads apart after it) of every
// source in rank order, finishes it (kAvg: divides it by nSrc, the number of ranks) and stores
// each result to every destination. The words of the first Batch
// sources are loaded before any is reduced, so those loads (across the links, or from the
// scratch) overlap; sources past Batch are loaded one at a time. op: the operator when Op is
// kAnyOp (Args.op).
template <typename T, uint32_t Op, uint32_t Unroll, uint32_t Batch, typename SrcFn, typename DstFn>
__device__ __forceinline__ void reduceWords(SrcFn src, uint32_t nSrc, DstFn dst, uint32_t nDst, uint64_t v,
                                            uint32_t numThreads, uint32_t op) {
  uint4 x[Batch][Unroll];
#pragma unroll
  for (uint32_t r = 0; r < Batch; ++r) {
    if (r < nSrc) {
#pragma unroll
      for (uint32_t u = 0; u < Unroll; ++u) x[r][u] = reinterpret_cast<const uint4*>(src(r))[v + u * numThreads];
    }
  }
#pragma unroll
  for (uint32_t u = 0; u < Unroll; ++u) {
    uint4 acc = x[0][u];
#pragma unroll
    for (uint32_t r = 1; r < Batch; ++r) {
      if (r < nSrc) acc = applyWord<T, Op>(acc, x[r][u], op);
    }
    for (uint32_t r = Batch; r < nSrc; ++r) {
      acc = applyWord<T, Op>(acc, reinterpret_cast<const uint4*>(src(r))[v + u * numThreads], op);
    }
    acc = finishWord<T, Op>(acc, nSrc, op);
    for (uint32_t i = 0; i < nDst; ++i) reinterpret_cast<uint4*>(dst(i))[v + u * numThreads] = acc;
  }
}

// Reduces len elements of type T: element e of the result is src(0)[e] op src(1)[e] op ...
// src(nSrc - 1)[e] (in that order, so every rank computes the same bits), finished (kAvg: divided
// by nSrc; every caller reduces all ranks, so that is the number of ranks) and stored at
// dst(0)[e] .. dst(nDst - 1)[e], over numThreads threads. When every source and destination is
// 16-byte aligned, each thread reduces Unroll 16-byte words per step; the rest element by element.
// Batch: how many sources' words are loaded at once (see reduceWords). op: the operator when Op
// is kAnyOp (Args.op).
template <typename T, uint32_t Op, uint32_t Unroll, uint32_t Batch = kUnrollRanks, typename SrcFn, typename DstFn>
__device__ __forceinline__ void reduceToAll(SrcFn src, uint32_t nSrc, DstFn dst, uint32_t nDst, uint64_t len,
                                            uint32_t threadId, uint32_t numThreads, uint32_t op) {
  constexpr uint64_t kVec = sizeof(uint4) / sizeof(T);
  bool vectors = true;
  for (uint32_t r = 0; r < nSrc; ++r) vectors = vectors && aligned(src(r), 16);
  for (uint32_t i = 0; i < nDst; ++i) vectors = vectors && aligned(dst(i), 16);
  uint64_t done = 0;
  if (vectors) {
    const uint64_t vecs = len / kVec;
    uint64_t v = threadId;
    for (; v + (Unroll - 1) * numThreads < vecs; v += uint64_t(numThreads) * Unroll) {
      reduceWords<T, Op, Unroll, Batch>(src, nSrc, dst, nDst, v, numThreads, op);
    }
    if constexpr (Unroll > 1) {
      for (; v < vecs; v += numThreads) reduceWords<T, Op, 1, Batch>(src, nSrc, dst, nDst, v, numThreads, op);
    }
    done = vecs * kVec;
  }
  for (uint64_t e = done + threadId; e < len; e += numThreads) {
    T acc = src(0)[e];
    for (uint32_t r = 1; r < nSrc; ++r) acc = apply<Op>(acc, src(r)[e], op);
    acc = finish<Op>(acc, nSrc, op);
    for (uint32_t i = 0; i < nDst; ++i) dst(i)[e] = acc;
  }
}

}  // namespace coll

#endif  // MSCCLPP_KERNELS_REDUCE_CUH_
