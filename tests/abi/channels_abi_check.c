/* channels_abi_check.c: the device handle headers compile as C11 and give the same layout as in
 * C++ (the sizes are asserted in the headers themselves; the offsets here). */
#include <mscclpp/device.h>
#include <mscclpp/fifo_device.h>
#include <mscclpp/memory_channel_device.h>
#include <mscclpp/packet_device.h>
#include <mscclpp/port_channel_device.h>
#include <mscclpp/semaphore_device.h>

#include <stddef.h>
#include <stdio.h>

#define CHECK_EQ(expr, want) _Static_assert((expr) == (want), #expr " must be " #want)

CHECK_EQ(_Alignof(mscclppProxyTrigger), 16);
CHECK_EQ(offsetof(mscclppProxyTrigger, snd), 8);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, size), 24);
CHECK_EQ(offsetof(mscclppFifoDeviceHandle, reserved), 28);
CHECK_EQ(offsetof(mscclppMemorySemaphoreDeviceHandle, expectedInboundToken), 24);
CHECK_EQ(offsetof(mscclppHostSemaphoreDeviceHandle, expectedInboundToken), 8);
CHECK_EQ(_Alignof(mscclppLL16Packet), 16);
CHECK_EQ(offsetof(mscclppLL16Packet, flag1), 12);
CHECK_EQ(offsetof(mscclppLL8Packet, flag), 4);
CHECK_EQ(offsetof(mscclppMemoryChannelDeviceHandle, packetBuffer), 48);
CHECK_EQ(offsetof(mscclppPortChannelDeviceHandle, semaphore), 8);
CHECK_EQ(offsetof(mscclppPortChannelDeviceHandle, fifo), 24);

int main(void) {
  /* The encoder is usable from C: a signal trigger of connection 5. */
  const mscclppProxyTrigger t = mscclppProxyTriggerEncode(MSCCLPP_TRIGGER_FLAG, 0, 0, MSCCLPP_TRIGGER_NO_DATA_SIZE, 5);
  const uint64_t wantSnd = ((uint64_t)5 << MSCCLPP_TRIGGER_SHIFT_CONNID) |
                           ((uint64_t)MSCCLPP_TRIGGER_FLAG << MSCCLPP_TRIGGER_SHIFT_TYPE);
  if (t.fst != 1 || t.snd != wantSnd) {
    printf("C encoder: {%#llx, %#llx}\n", (unsigned long long)t.fst, (unsigned long long)t.snd);
    return 1;
  }
  return 0;
}
