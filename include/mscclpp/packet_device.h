/*
 * mscclpp/packet_device.h: LL ("low latency") packets, data that carries its own ready flag.
 *
 * A writer stores data together with a flag; a reader spins until the flag it expects appears and
 * then has the data, with no separate signal. Each (data, flag) pair is one naturally aligned
 * 64-bit element of a single store (LL16: one 128-bit st.volatile.global.v2.u64 of two such
 * elements; LL8: one st.volatile.global.u64), and the PTX memory model makes each aligned 64-bit
 * element single-copy atomic: a reader that sees the flag sees the data stored with it. The two
 * halves of an LL16 packet may land separately, so its reader checks both flags. Packets order
 * nothing else: other memory written before a packet is not guaranteed visible to its reader.
 *
 * Flags: a reader waits for an exact flag value, so a packet buffer must never already hold the
 * flag a reader waits for. Buffers start zeroed (never use flag 0); use a new flag for every
 * round (e.g. 1, 2, 3, ...), and do not overwrite a packet with the next round before its reader
 * has read it (alternate two buffers, or synchronise with a semaphore).
 */
#ifndef MSCCLPP_PACKET_DEVICE_H_
#define MSCCLPP_PACKET_DEVICE_H_

#include <mscclpp/device.h>

/* 16-byte packet: 8 data bytes, each 4 with their own copy of the flag. */
typedef struct mscclppLL16Packet {
  MSCCLPP_ALIGNAS(16) uint32_t data0; /* data bytes 0-3 */
  uint32_t flag0;                     /* flag of data0 */
  uint32_t data1;                     /* data bytes 4-7 */
  uint32_t flag1;                     /* flag of data1 */

#if defined(__CUDACC__)
  typedef uint64_t Payload;                      /* the data one packet carries */
  static constexpr uint64_t kPayloadBytes = 8;   /* sizeof(Payload) */

  /* Stores data and flag with one 128-bit volatile store (see the top of the file). Never blocks. */
  MSCCLPP_DEVICE_INLINE void write(uint64_t data, uint32_t flag) {
    const uint64_t f = static_cast<uint64_t>(flag) << 32;
    mscclppStoreVolatile128(this, (data & 0xffffffffu) | f, (data >> 32) | f);
  }

  /* One 128-bit volatile load; when both flags equal `flag`, stores the data in *data and returns
   * true, else returns false. Never blocks. */
  MSCCLPP_DEVICE_INLINE bool readOnce(uint32_t flag, uint64_t* data) const {
    uint64_t lo, hi;
    mscclppLoadVolatile128(this, &lo, &hi);
    if (static_cast<uint32_t>(lo >> 32) != flag || static_cast<uint32_t>(hi >> 32) != flag) return false;
    *data = (lo & 0xffffffffu) | (hi << 32);
    return true;
  }

  /* Spins on readOnce() until the packet carries `flag` and returns its data. maxSpinCount
   * bounds the spin (see mscclpp/device.h). */
  MSCCLPP_DEVICE_INLINE uint64_t read(uint32_t flag, int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) const {
    uint64_t data = 0;
    for (int64_t spins = 0; !readOnce(flag, &data); ++spins) mscclppSpinCheck(spins, maxSpinCount);
    return data;
  }

  /* Zeroes the packet (flag 0) with one volatile store. */
  MSCCLPP_DEVICE_INLINE void clear() { mscclppStoreVolatile128(this, 0, 0); }
#endif
} mscclppLL16Packet;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppLL16Packet) == 16, "mscclppLL16Packet is 16 bytes");
MSCCLPP_STATIC_ASSERT(MSCCLPP_ALIGNOF(mscclppLL16Packet) == 16, "mscclppLL16Packet is 16-byte aligned");

/* 8-byte packet: 4 data bytes and their flag. */
typedef struct mscclppLL8Packet {
  MSCCLPP_ALIGNAS(8) uint32_t data; /* data bytes 0-3 */
  uint32_t flag;                    /* flag of data */

#if defined(__CUDACC__)
  typedef uint32_t Payload;                    /* the data one packet carries */
  static constexpr uint64_t kPayloadBytes = 4; /* sizeof(Payload) */

  /* Stores data and flag with one 64-bit volatile store. Never blocks. */
  MSCCLPP_DEVICE_INLINE void write(uint32_t value, uint32_t flagValue) {
    mscclppStoreVolatile64(this, static_cast<uint64_t>(value) | (static_cast<uint64_t>(flagValue) << 32));
  }

  /* One 64-bit volatile load; when the flag equals `flagValue`, stores the data in *value and
   * returns true, else returns false. Never blocks. */
  MSCCLPP_DEVICE_INLINE bool readOnce(uint32_t flagValue, uint32_t* value) const {
    const uint64_t v = mscclppLoadVolatile64(this);
    if (static_cast<uint32_t>(v >> 32) != flagValue) return false;
    *value = static_cast<uint32_t>(v);
    return true;
  }

  /* Spins on readOnce() until the packet carries `flagValue` and returns its data. */
  MSCCLPP_DEVICE_INLINE uint32_t read(uint32_t flagValue, int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) const {
    uint32_t value = 0;
    for (int64_t spins = 0; !readOnce(flagValue, &value); ++spins) mscclppSpinCheck(spins, maxSpinCount);
    return value;
  }

  /* Zeroes the packet (flag 0) with one volatile store. */
  MSCCLPP_DEVICE_INLINE void clear() { mscclppStoreVolatile64(this, 0); }
#endif
} mscclppLL8Packet;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppLL8Packet) == 8, "mscclppLL8Packet is 8 bytes");
MSCCLPP_STATIC_ASSERT(MSCCLPP_ALIGNOF(mscclppLL8Packet) == 8, "mscclppLL8Packet is 8-byte aligned");

/* Packet bytes that carry dataBytes of data (a partial last packet counts whole). */
MSCCLPP_HOST_DEVICE_INLINE uint64_t mscclppLL16PacketBytes(uint64_t dataBytes) { return (dataBytes + 7) / 8 * 16; }
MSCCLPP_HOST_DEVICE_INLINE uint64_t mscclppLL8PacketBytes(uint64_t dataBytes) { return (dataBytes + 3) / 4 * 8; }

#if defined(__CUDACC__)
/*
 * Writes `bytes` bytes of data at src into packets at dstPackets with `flag`: packet i carries
 * data bytes [i*P, (i+1)*P) (P = Packet::kPayloadBytes); a partial last packet is padded with
 * zeros. Thread threadId of numThreads writes packets threadId, threadId+numThreads, ...
 * Alignment: src to P bytes, dstPackets to sizeof(Packet). Never blocks.
 */
template <typename Packet>
MSCCLPP_DEVICE_INLINE void mscclppCopyToPackets(void* dstPackets, const void* src, uint64_t bytes, uint32_t threadId,
                                                uint32_t numThreads, uint32_t flag) {
  typedef typename Packet::Payload Payload;
  const uint64_t full = bytes / Packet::kPayloadBytes;
  const uint64_t count = (bytes + Packet::kPayloadBytes - 1) / Packet::kPayloadBytes;
  Packet* out = static_cast<Packet*>(dstPackets);
  const Payload* in = static_cast<const Payload*>(src);
  for (uint64_t i = threadId; i < count; i += numThreads) {
    Payload v = 0;
    if (i < full) {
      v = in[i];
    } else {
      const unsigned char* b = reinterpret_cast<const unsigned char*>(in + i);
      for (uint64_t r = 0; r < bytes - full * Packet::kPayloadBytes; ++r) v |= static_cast<Payload>(b[r]) << (8 * r);
    }
    out[i].write(v, flag);
  }
}

/*
 * The reverse of mscclppCopyToPackets: waits for each packet at srcPackets to carry `flag` and
 * writes its data to dst, `bytes` data bytes in all (of a partial last packet only the bytes that
 * fit). Same striding and alignment. Each packet's wait is bounded by maxSpinCount (see
 * mscclpp/device.h). The data stores are plain: order them for other readers with a fence or a
 * semaphore.
 */
template <typename Packet>
MSCCLPP_DEVICE_INLINE void mscclppCopyFromPackets(void* dst, const void* srcPackets, uint64_t bytes, uint32_t threadId,
                                                  uint32_t numThreads, uint32_t flag,
                                                  int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
  typedef typename Packet::Payload Payload;
  const uint64_t full = bytes / Packet::kPayloadBytes;
  const uint64_t count = (bytes + Packet::kPayloadBytes - 1) / Packet::kPayloadBytes;
  const Packet* in = static_cast<const Packet*>(srcPackets);
  Payload* out = static_cast<Payload*>(dst);
  for (uint64_t i = threadId; i < count; i += numThreads) {
    const Payload v = in[i].read(flag, maxSpinCount);
    if (i < full) {
      out[i] = v;
    } else {
      unsigned char* b = reinterpret_cast<unsigned char*>(out + i);
      for (uint64_t r = 0; r < bytes - full * Packet::kPayloadBytes; ++r) b[r] = static_cast<unsigned char>(v >> (8 * r));
    }
  }
}
#endif /* __CUDACC__ */

#endif /* MSCCLPP_PACKET_DEVICE_H_ */
