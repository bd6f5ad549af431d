// channels_abi_check pins the layout of the device handles in include/mscclpp/*_device.h, as plain
// C++ (no nvcc) sees them, and checks that the new trigger macros and encoder agree with the
// legacy mscclppfifo.h. It fails to compile when a number drifts, and when run compares the two
// trigger encodings at runtime and prints the layout.
#include <mscclpp.h>
#include <mscclpp/device.h>
#include <mscclpp/fifo_device.h>
#include <mscclpp/memory_channel_device.h>
#include <mscclpp/packet_device.h>
#include <mscclpp/port_channel_device.h>
#include <mscclpp/semaphore_device.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

#define CHECK_EQ(expr, want) static_assert((expr) == (want), #expr " must be " #want)

// Trigger macros: the same numbers as the legacy header.
CHECK_EQ(MSCCLPP_TRIGGER_BITS_SIZE, MSCCLPP_BITS_SIZE);
CHECK_EQ(MSCCLPP_TRIGGER_BITS_OFFSET, MSCCLPP_BITS_OFFSET);
CHECK_EQ(MSCCLPP_TRIGGER_BITS_CONNID, MSCCLPP_BITS_CONNID);
CHECK_EQ(MSCCLPP_TRIGGER_BITS_TYPE, MSCCLPP_BITS_TYPE);
CHECK_EQ(MSCCLPP_TRIGGER_DATA, mscclppData);
CHECK_EQ(MSCCLPP_TRIGGER_FLAG, mscclppFlag);
CHECK_EQ(MSCCLPP_TRIGGER_SYNC, mscclppSync);
CHECK_EQ(MSCCLPP_TRIGGER_SHIFT_SIZE, 0);
CHECK_EQ(MSCCLPP_TRIGGER_SHIFT_SRC_OFFSET, 32);
CHECK_EQ(MSCCLPP_TRIGGER_SHIFT_DST_OFFSET, 0);
CHECK_EQ(MSCCLPP_TRIGGER_SHIFT_CONNID, 32);
CHECK_EQ(MSCCLPP_TRIGGER_SHIFT_TYPE, 42);
CHECK_EQ(MSCCLPP_TRIGGER_SHIFT_TYPE + MSCCLPP_TRIGGER_BITS_TYPE <= 64, true);
CHECK_EQ(MSCCLPP_TRIGGER_NO_DATA_SIZE, 1);

// Trigger and FIFO.
CHECK_EQ(sizeof(mscclppProxyTrigger), 16);
CHECK_EQ(alignof(mscclppProxyTrigger), 16);
CHECK_EQ(sizeof(mscclppProxyTrigger), sizeof(mscclppTrigger));
CHECK_EQ(offsetof(mscclppProxyTrigger, fst), 0);
CHECK_EQ(offsetof(mscclppProxyTrigger, snd), 8);
CHECK_EQ(sizeof(mscclppFifoDeviceHandle), 32);
CHECK_EQ(alignof(mscclppFifoDeviceHandle), 8);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, triggers), 0);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, tailReplica), 8);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, head), 16);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, size), 24);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, reserved), 28);

// Semaphores.
CHECK_EQ(sizeof(mscclppMemorySemaphoreDeviceHandle), 32);
CHECK_EQ(alignof(mscclppMemorySemaphoreDeviceHandle), 8);
CHECK_EQ(offsetof(mscclppMemorySemaphoreDeviceHandle, inboundToken), 0);
CHECK_EQ(offsetof(mscclppMemorySemaphoreDeviceHandle, outboundToken), 8);
CHECK_EQ(offsetof(mscclppMemorySemaphoreDeviceHandle, remoteInboundToken), 16);
CHECK_EQ(offsetof(mscclppMemorySemaphoreDeviceHandle, expectedInboundToken), 24);
CHECK_EQ(sizeof(mscclppHostSemaphoreDeviceHandle), 16);
CHECK_EQ(alignof(mscclppHostSemaphoreDeviceHandle), 8);
CHECK_EQ(offsetof(mscclppHostSemaphoreDeviceHandle, inboundToken), 0);
CHECK_EQ(offsetof(mscclppHostSemaphoreDeviceHandle, expectedInboundToken), 8);

// Packets.
CHECK_EQ(sizeof(mscclppLL16Packet), 16);
CHECK_EQ(alignof(mscclppLL16Packet), 16);
CHECK_EQ(offsetof(mscclppLL16Packet, data0), 0);
CHECK_EQ(offsetof(mscclppLL16Packet, flag0), 4);
CHECK_EQ(offsetof(mscclppLL16Packet, data1), 8);
CHECK_EQ(offsetof(mscclppLL16Packet, flag1), 12);
CHECK_EQ(sizeof(mscclppLL8Packet), 8);
CHECK_EQ(alignof(mscclppLL8Packet), 8);
CHECK_EQ(offsetof(mscclppLL8Packet, data), 0);
CHECK_EQ(offsetof(mscclppLL8Packet, flag), 4);

// Memory channels.
CHECK_EQ(sizeof(mscclppBaseMemoryChannelDeviceHandle), 32);
CHECK_EQ(alignof(mscclppBaseMemoryChannelDeviceHandle), 8);
CHECK_EQ(offsetof(mscclppBaseMemoryChannelDeviceHandle, semaphore), 0);
CHECK_EQ(sizeof(mscclppMemoryChannelDeviceHandle), 56);
CHECK_EQ(alignof(mscclppMemoryChannelDeviceHandle), 8);
CHECK_EQ(offsetof(mscclppMemoryChannelDeviceHandle, semaphore), 0);
CHECK_EQ(offsetof(mscclppMemoryChannelDeviceHandle, dst), 32);
CHECK_EQ(offsetof(mscclppMemoryChannelDeviceHandle, src), 40);
CHECK_EQ(offsetof(mscclppMemoryChannelDeviceHandle, packetBuffer), 48);

// Port channels.
CHECK_EQ(sizeof(mscclppPortChannelDeviceHandle), 56);
CHECK_EQ(alignof(mscclppPortChannelDeviceHandle), 8);
CHECK_EQ(offsetof(mscclppPortChannelDeviceHandle, channelId), 0);
CHECK_EQ(offsetof(mscclppPortChannelDeviceHandle, reserved), 4);
CHECK_EQ(offsetof(mscclppPortChannelDeviceHandle, semaphore), 8);
CHECK_EQ(offsetof(mscclppPortChannelDeviceHandle, fifo), 24);

// Handles are copied to the GPU byte for byte.
static_assert(std::is_trivially_copyable<mscclppMemoryChannelDeviceHandle>::value, "plain data");
static_assert(std::is_trivially_copyable<mscclppPortChannelDeviceHandle>::value, "plain data");
static_assert(std::is_standard_layout<mscclppMemoryChannelDeviceHandle>::value, "plain data");
static_assert(std::is_standard_layout<mscclppPortChannelDeviceHandle>::value, "plain data");

namespace {

// legacyEncode builds a trigger through the legacy union's bit-fields.
mscclppTrigger legacyEncode(uint64_t type, uint64_t dst, uint64_t src, uint64_t size, uint64_t conn) {
  mscclppTrigger t;
  t.value[0] = t.value[1] = 0;
  t.fields.type = type;
  t.fields.dstDataOffset = dst;
  t.fields.srcDataOffset = src;
  t.fields.dataSize = size;
  t.fields.connId = conn;
  return t;
}

}  // namespace

int main() {
  const uint64_t all = ~uint64_t(0);
  const uint64_t cases[][5] = {
      {mscclppData, 0x100, 0x200, 0x300, 3},
      {mscclppFlag, 0, 0, 1, 0},
      {mscclppData | mscclppFlag | mscclppSync, 0xdeadbeef, 0xcafef00d, 0x12345678, 0x2aa},
      {7, 0xffffffff, 0xffffffff, 0xffffffff, 1023},
      {all, all, all, all, all},  // over-wide values truncate alike
  };
  int failures = 0;
  for (const auto& c : cases) {
    const mscclppProxyTrigger got = mscclppProxyTriggerEncode(c[0], c[1], c[2], c[3], c[4]);
    const mscclppTrigger want = legacyEncode(c[0], c[1], c[2], c[3], c[4]);
    if (got.fst != want.value[0] || got.snd != want.value[1]) {
      std::printf("trigger mismatch: new {%#llx, %#llx}, legacy {%#llx, %#llx}\n", (unsigned long long)got.fst,
                  (unsigned long long)got.snd, (unsigned long long)want.value[0], (unsigned long long)want.value[1]);
      ++failures;
    }
  }
  std::printf("%-40s %5s %5s\n", "device handle", "size", "align");
#define ROW(T) std::printf("%-40s %5zu %5zu\n", #T, sizeof(T), alignof(T))
  ROW(mscclppProxyTrigger);
  ROW(mscclppFifoDeviceHandle);
  ROW(mscclppMemorySemaphoreDeviceHandle);
  ROW(mscclppHostSemaphoreDeviceHandle);
  ROW(mscclppLL16Packet);
  ROW(mscclppLL8Packet);
  ROW(mscclppBaseMemoryChannelDeviceHandle);
  ROW(mscclppMemoryChannelDeviceHandle);
  ROW(mscclppPortChannelDeviceHandle);
#undef ROW
  return failures == 0 ? 0 : 1;
}
