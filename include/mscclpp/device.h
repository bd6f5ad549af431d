/*
 * mscclpp/device.h: what every device header of include/mscclpp/ shares.
 *
 * The handle headers define plain-data structs that the host fills and copies to the GPU; they
 * compile as C11, C++ and CUDA C++. Their methods, and the helpers below marked device-only,
 * exist only when nvcc compiles the file (__CUDACC__).
 *
 * Memory-ordering vocabulary used by the headers (PTX memory consistency model):
 *   acquire: ld.acquire.sys; later loads and stores of the thread are not performed before it.
 *   release: st.release.sys; earlier loads and stores of the thread are performed before it, at
 *            system scope (visible to peer GPUs and the host).
 *   relaxed: ld/st.relaxed.sys (or .volatile); atomic, but orders nothing else.
 *
 * Spin bounds: every blocking device method takes `int64_t maxSpinCount`. A negative value
 * (MSCCLPP_SPIN_UNBOUNDED, the default) spins until the condition holds; a value n >= 0 executes
 * __trap() after n unsuccessful polls, which aborts the kernel with an error the host sees on its
 * next synchronising CUDA call.
 */
#ifndef MSCCLPP_DEVICE_H_
#define MSCCLPP_DEVICE_H_

#include <stddef.h>
#include <stdint.h>

/* MSCCLPP_ALIGNAS(n): the alignment specifier of the language, for the first field of a struct. */
#if defined(__cplusplus)
#define MSCCLPP_ALIGNAS(n) alignas(n)
#else
#define MSCCLPP_ALIGNAS(n) _Alignas(n)
#endif

/* MSCCLPP_ALIGNOF(T): the alignment of type T, in C and C++. */
#if defined(__cplusplus)
#define MSCCLPP_ALIGNOF(T) alignof(T)
#else
#define MSCCLPP_ALIGNOF(T) _Alignof(T)
#endif

/* MSCCLPP_STATIC_ASSERT(cond, msg): compile-time check at namespace/file scope, in C and C++. */
#if defined(__cplusplus)
#define MSCCLPP_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
#else
#define MSCCLPP_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#endif

/* MSCCLPP_HOST_DEVICE_INLINE: a header function callable from C, C++ and (under nvcc) device code. */
#if defined(__CUDACC__)
#define MSCCLPP_HOST_DEVICE_INLINE static __forceinline__ __host__ __device__
#else
#define MSCCLPP_HOST_DEVICE_INLINE static inline
#endif

/* Spin until the condition holds (see maxSpinCount above). */
#define MSCCLPP_SPIN_UNBOUNDED (-1)

#if defined(__CUDACC__)

/* MSCCLPP_DEVICE_INLINE: a device-only function, always inlined. */
#define MSCCLPP_DEVICE_INLINE __forceinline__ __device__

/* Called once per unsuccessful poll with the number of polls so far; traps once a bound n >= 0 is
 * reached (see the top of this file). */
MSCCLPP_DEVICE_INLINE void mscclppSpinCheck(int64_t spins, int64_t maxSpinCount) {
  if (maxSpinCount >= 0 && spins >= maxSpinCount) __trap();
}

/* Acquire load of *p at system scope. */
MSCCLPP_DEVICE_INLINE uint64_t mscclppLoadAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* Relaxed (atomic, unordered) load of *p at system scope. */
MSCCLPP_DEVICE_INLINE uint64_t mscclppLoadRelaxedSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.b64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

/* Release store of v to *p at system scope. */
MSCCLPP_DEVICE_INLINE void mscclppStoreReleaseSys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Relaxed (atomic, unordered) store of v to *p at system scope. */
MSCCLPP_DEVICE_INLINE void mscclppStoreRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.b64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

/* Release fence at system scope: the thread's earlier loads and stores are performed before its
 * later stores (fence.acq_rel.sys, also an acquire fence for its later loads). */
MSCCLPP_DEVICE_INLINE void mscclppFenceSys() { asm volatile("fence.acq_rel.sys;" ::: "memory"); }

/* One 128-bit volatile store of {lo, hi} to the 16-byte aligned global address p. Each 64-bit
 * half is single-copy atomic; nothing promises that both halves become visible at once. */
MSCCLPP_DEVICE_INLINE void mscclppStoreVolatile128(void* p, uint64_t lo, uint64_t hi) {
  asm volatile("st.volatile.global.v2.u64 [%0], {%1,%2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
}

/* One 128-bit volatile load from the 16-byte aligned global address p; each half is atomic. */
MSCCLPP_DEVICE_INLINE void mscclppLoadVolatile128(const void* p, uint64_t* lo, uint64_t* hi) {
  asm volatile("ld.volatile.global.v2.u64 {%0,%1}, [%2];" : "=l"(*lo), "=l"(*hi) : "l"(p) : "memory");
}

/* One 64-bit volatile store / load at an 8-byte aligned global address (single-copy atomic). */
MSCCLPP_DEVICE_INLINE void mscclppStoreVolatile64(void* p, uint64_t v) {
  asm volatile("st.volatile.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
MSCCLPP_DEVICE_INLINE uint64_t mscclppLoadVolatile64(const void* p) {
  uint64_t v;
  asm volatile("ld.volatile.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

#endif /* __CUDACC__ */

#endif /* MSCCLPP_DEVICE_H_ */
