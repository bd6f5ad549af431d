/*
 * mscclpp/memory_channel_device.h: memory channels, where GPU threads move data to and from a peer
 * GPU's memory directly (peer access or CUDA IPC mappings) and synchronise through a memory
 * semaphore. No proxy is involved.
 *
 * Offsets and sizes are in bytes. `dst` is the peer's registered memory as mapped on this GPU,
 * `src` this side's registered memory, `packetBuffer` this side's scratch where the peer writes
 * packets. Copies split their work over numThreads cooperating threads: thread threadId (in
 * [0, numThreads)) takes its share, and the copy is complete once all numThreads threads have
 * returned. Copies use plain loads and stores: publish them to the peer with signal() (release)
 * and read the peer's with wait() (acquire) first. When several threads copied, let them all
 * finish first (__syncthreads(), or a grid barrier) and signal from one thread; the release is
 * cumulative, so it covers the writes the barrier ordered before it (likewise one thread waits,
 * then a barrier, then all threads read).
 */
#ifndef MSCCLPP_MEMORY_CHANNEL_DEVICE_H_
#define MSCCLPP_MEMORY_CHANNEL_DEVICE_H_

#include <mscclpp/device.h>
#include <mscclpp/packet_device.h>
#include <mscclpp/semaphore_device.h>

#if defined(__CUDACC__)
/* Copies words [threadId, words) with stride numThreads, as Word loads and stores. */
template <typename Word>
MSCCLPP_DEVICE_INLINE void mscclppCopyWords(void* dst, const void* src, uint64_t words, uint32_t threadId,
                                            uint32_t numThreads) {
  Word* d = static_cast<Word*>(dst);
  const Word* s = static_cast<const Word*>(src);
  for (uint64_t i = threadId; i < words; i += numThreads) d[i] = s[i];
}

/*
 * Copies `bytes` bytes from src to dst (the ranges must not overlap), any alignment, any size,
 * split over numThreads threads. The widest word (16, 8, 4 or 1 bytes) for which dst and src are
 * equally misaligned is used: single bytes up to dst's next word boundary, whole words, then the
 * remaining bytes. Never blocks; plain loads and stores.
 */
MSCCLPP_DEVICE_INLINE void mscclppCopy(void* dst, const void* src, uint64_t bytes, uint32_t threadId,
                                       uint32_t numThreads) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  const uint64_t misaligned = reinterpret_cast<uintptr_t>(d) ^ reinterpret_cast<uintptr_t>(s);
  const uint64_t word = (misaligned & 15) == 0 ? 16 : (misaligned & 7) == 0 ? 8 : (misaligned & 3) == 0 ? 4 : 1;
  uint64_t head = (word - (reinterpret_cast<uintptr_t>(d) & (word - 1))) & (word - 1);
  if (head > bytes) head = bytes;
  const uint64_t words = word == 1 ? 0 : (bytes - head) / word; /* bytes only: the tail loop copies all */
  const uint64_t tail = head + words * word;
  for (uint64_t i = threadId; i < head; i += numThreads) d[i] = s[i];
  switch (word) {
    case 16:
      mscclppCopyWords<uint4>(d + head, s + head, words, threadId, numThreads);
      break;
    case 8:
      mscclppCopyWords<uint2>(d + head, s + head, words, threadId, numThreads);
      break;
    case 4:
      mscclppCopyWords<uint32_t>(d + head, s + head, words, threadId, numThreads);
      break;
    default:
      break; /* word == 1: no words; the tail loop below copies everything */
  }
  for (uint64_t i = tail + threadId; i < bytes; i += numThreads) d[i] = s[i];
}
#endif /* __CUDACC__ */

/* A memory channel that only synchronises: the semaphore methods of mscclppMemoryChannelDeviceHandle. */
typedef struct mscclppBaseMemoryChannelDeviceHandle {
  mscclppMemorySemaphoreDeviceHandle semaphore; /* shared with the peer's channel */

#if defined(__CUDACC__)
  /* mscclppMemorySemaphoreDeviceHandle::signal(): release; never blocks. One thread at a time. */
  MSCCLPP_DEVICE_INLINE void signal() { semaphore.signal(); }
  /* mscclppMemorySemaphoreDeviceHandle::relaxedSignal(): no ordering; never blocks. */
  MSCCLPP_DEVICE_INLINE void relaxedSignal() { semaphore.relaxedSignal(); }
  /* mscclppMemorySemaphoreDeviceHandle::wait(): acquire; spins, bounded by maxSpinCount. */
  MSCCLPP_DEVICE_INLINE void wait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) { semaphore.wait(maxSpinCount); }
  /* mscclppMemorySemaphoreDeviceHandle::relaxedWait(): no ordering; spins, bounded by maxSpinCount. */
  MSCCLPP_DEVICE_INLINE void relaxedWait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    semaphore.relaxedWait(maxSpinCount);
  }
  /* mscclppMemorySemaphoreDeviceHandle::poll(): acquire; never blocks. */
  MSCCLPP_DEVICE_INLINE bool poll() { return semaphore.poll(); }
#endif
} mscclppBaseMemoryChannelDeviceHandle;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppBaseMemoryChannelDeviceHandle) == 32,
                      "mscclppBaseMemoryChannelDeviceHandle is 32 bytes");

/* A memory channel: a semaphore plus the two sides' memory and this side's packet scratch. */
typedef struct mscclppMemoryChannelDeviceHandle {
  mscclppMemorySemaphoreDeviceHandle semaphore; /* shared with the peer's channel */
  void* dst;                                    /* the peer's registered memory, mapped on this GPU */
  void* src;                                    /* this side's registered memory */
  void* packetBuffer;                           /* this side's packet scratch (incoming packets), may be NULL */

#if defined(__CUDACC__)
  /* Copies bytes from src+srcOffset to the peer's dst+dstOffset (mscclppCopy: any alignment and
   * size, numThreads cooperating threads, plain stores). Never blocks. */
  MSCCLPP_DEVICE_INLINE void put(uint64_t dstOffset, uint64_t srcOffset, uint64_t bytes, uint32_t threadId,
                                 uint32_t numThreads) {
    mscclppCopy(static_cast<char*>(dst) + dstOffset, static_cast<const char*>(src) + srcOffset, bytes, threadId,
                numThreads);
  }

  /* put() with the same offset on both sides. */
  MSCCLPP_DEVICE_INLINE void put(uint64_t offset, uint64_t bytes, uint32_t threadId, uint32_t numThreads) {
    put(offset, offset, bytes, threadId, numThreads);
  }

  /* The reverse of put(): copies bytes from the peer's dst+dstOffset to src+srcOffset (each offset
   * still names its own buffer). Plain loads: wait() for the peer's data first. Never blocks. */
  MSCCLPP_DEVICE_INLINE void get(uint64_t dstOffset, uint64_t srcOffset, uint64_t bytes, uint32_t threadId,
                                 uint32_t numThreads) {
    mscclppCopy(static_cast<char*>(src) + srcOffset, static_cast<const char*>(dst) + dstOffset, bytes, threadId,
                numThreads);
  }

  /* get() with the same offset on both sides. */
  MSCCLPP_DEVICE_INLINE void get(uint64_t offset, uint64_t bytes, uint32_t threadId, uint32_t numThreads) {
    get(offset, offset, bytes, threadId, numThreads);
  }

  /* Element `index` of the peer's memory seen as an array of T (dst must be aligned for T); one
   * plain load. */
  template <typename T>
  MSCCLPP_DEVICE_INLINE T read(uint64_t index) const {
    return static_cast<const T*>(dst)[index];
  }

  /* Stores v into element `index` of the peer's memory seen as an array of T; one plain store. */
  template <typename T>
  MSCCLPP_DEVICE_INLINE void write(uint64_t index, const T& v) {
    static_cast<T*>(dst)[index] = v;
  }

  /* Writes `bytes` data bytes from src+srcOffset as packets carrying `flag` into the peer's
   * packet scratch, which is dst memory, at dstOffset (a packet-byte offset; the data takes
   * mscclppLL16PacketBytes(bytes) / mscclppLL8PacketBytes(bytes)). See mscclppCopyToPackets for
   * alignment; never blocks. The peer reads them with unpackPackets(). */
  template <typename Packet = mscclppLL16Packet>
  MSCCLPP_DEVICE_INLINE void putPackets(uint64_t dstOffset, uint64_t srcOffset, uint64_t bytes, uint32_t threadId,
                                        uint32_t numThreads, uint32_t flag) {
    mscclppCopyToPackets<Packet>(static_cast<char*>(dst) + dstOffset, static_cast<const char*>(src) + srcOffset,
                                 bytes, threadId, numThreads, flag);
  }

  /* Waits for the packets in this side's packetBuffer at srcOffset (packet bytes) to carry `flag`
   * and writes their `bytes` data bytes to src+dstOffset (this side's memory). Each packet's wait
   * is bounded by maxSpinCount; see mscclppCopyFromPackets. */
  template <typename Packet = mscclppLL16Packet>
  MSCCLPP_DEVICE_INLINE void unpackPackets(uint64_t dstOffset, uint64_t srcOffset, uint64_t bytes, uint32_t threadId,
                                           uint32_t numThreads, uint32_t flag,
                                           int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    mscclppCopyFromPackets<Packet>(static_cast<char*>(src) + dstOffset,
                                   static_cast<const char*>(packetBuffer) + srcOffset, bytes, threadId, numThreads,
                                   flag, maxSpinCount);
  }

  /* unpackPackets() from packets in the peer's memory instead: waits for the packets at the
   * peer's dst+srcOffset (packet bytes, written there by the peer) to carry `flag` and writes
   * their data to src+dstOffset. */
  template <typename Packet = mscclppLL16Packet>
  MSCCLPP_DEVICE_INLINE void getPackets(uint64_t dstOffset, uint64_t srcOffset, uint64_t bytes, uint32_t threadId,
                                        uint32_t numThreads, uint32_t flag,
                                        int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    mscclppCopyFromPackets<Packet>(static_cast<char*>(src) + dstOffset, static_cast<const char*>(dst) + srcOffset,
                                   bytes, threadId, numThreads, flag, maxSpinCount);
  }

  /* The semaphore methods, as in mscclppBaseMemoryChannelDeviceHandle. */
  MSCCLPP_DEVICE_INLINE void signal() { semaphore.signal(); }
  MSCCLPP_DEVICE_INLINE void relaxedSignal() { semaphore.relaxedSignal(); }
  MSCCLPP_DEVICE_INLINE void wait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) { semaphore.wait(maxSpinCount); }
  MSCCLPP_DEVICE_INLINE void relaxedWait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    semaphore.relaxedWait(maxSpinCount);
  }
  MSCCLPP_DEVICE_INLINE bool poll() { return semaphore.poll(); }
#endif
} mscclppMemoryChannelDeviceHandle;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppMemoryChannelDeviceHandle) == 56, "mscclppMemoryChannelDeviceHandle is 56 bytes");

#endif /* MSCCLPP_MEMORY_CHANNEL_DEVICE_H_ */
