// channels_device_check proves that the device half of include/mscclpp/*_device.h compiles under
// nvcc: its kernels call every device method of every handle, packet and helper. It is compiled
// only (nvcc -c); running it would need live peers and a proxy (see
// tests/gpu/channels_device/main.cu for the GPU test).
#include <mscclpp/device.h>
#include <mscclpp/fifo_device.h>
#include <mscclpp/memory_channel_device.h>
#include <mscclpp/packet_device.h>
#include <mscclpp/port_channel_device.h>
#include <mscclpp/semaphore_device.h>

// The device view of every struct is the host view.
static_assert(sizeof(mscclppProxyTrigger) == 16 && alignof(mscclppProxyTrigger) == 16, "trigger");
static_assert(sizeof(mscclppFifoDeviceHandle) == 32, "fifo");
static_assert(sizeof(mscclppMemorySemaphoreDeviceHandle) == 32, "memory semaphore");
static_assert(sizeof(mscclppHostSemaphoreDeviceHandle) == 16, "host semaphore");
static_assert(sizeof(mscclppLL16Packet) == 16 && alignof(mscclppLL16Packet) == 16, "LL16");
static_assert(sizeof(mscclppLL8Packet) == 8 && alignof(mscclppLL8Packet) == 8, "LL8");
static_assert(sizeof(mscclppBaseMemoryChannelDeviceHandle) == 32, "base memory channel");
static_assert(sizeof(mscclppMemoryChannelDeviceHandle) == 56, "memory channel");
static_assert(sizeof(mscclppPortChannelDeviceHandle) == 56, "port channel");

__global__ void exerciseFifo(mscclppFifoDeviceHandle fifo, uint64_t* out) {
  const uint64_t n = fifo.push(mscclppProxyTriggerEncode(MSCCLPP_TRIGGER_DATA, 1, 2, 3, 4));
  const uint64_t m = fifo.push(MSCCLPP_TRIGGER_FLAG, 0, 0, MSCCLPP_TRIGGER_NO_DATA_SIZE, 4, 1000);
  fifo.sync(n);
  fifo.sync(m, 1000);
  out[threadIdx.x] = n + m;
}

__global__ void exerciseSemaphores(mscclppMemorySemaphoreDeviceHandle mem, mscclppHostSemaphoreDeviceHandle host,
                                   int* out) {
  mem.signal();
  mem.relaxedSignal();
  mem.wait();
  mem.wait(1000);
  mem.relaxedWait();
  mem.relaxedWait(1000);
  host.wait();
  host.wait(1000);
  out[0] = mem.poll() + host.poll();
}

__global__ void exercisePackets(mscclppLL16Packet* p16, mscclppLL8Packet* p8, uint64_t* data, uint64_t bytes) {
  p16[0].write(data[0], 1);
  uint64_t v16 = 0;
  v16 = p16[1].read(1) + p16[1].read(2, 1000);
  if (p16[2].readOnce(3, &v16)) data[1] = v16;
  p16[3].clear();
  p8[0].write(static_cast<uint32_t>(data[2]), 1);
  uint32_t v8 = p8[1].read(1) + p8[1].read(2, 1000);
  if (p8[2].readOnce(3, &v8)) data[3] = v8;
  p8[3].clear();
  data[4] = v16 + mscclppLL16PacketBytes(bytes) + mscclppLL8PacketBytes(bytes);
  mscclppCopyToPackets<mscclppLL16Packet>(p16, data, bytes, threadIdx.x, blockDim.x, 5);
  mscclppCopyToPackets<mscclppLL8Packet>(p8, data, bytes, threadIdx.x, blockDim.x, 5);
  mscclppCopyFromPackets<mscclppLL16Packet>(data, p16, bytes, threadIdx.x, blockDim.x, 5);
  mscclppCopyFromPackets<mscclppLL8Packet>(data, p8, bytes, threadIdx.x, blockDim.x, 5, 1000);
}

__global__ void exerciseBaseMemoryChannel(mscclppBaseMemoryChannelDeviceHandle ch, int* out) {
  ch.signal();
  ch.relaxedSignal();
  ch.wait();
  ch.wait(1000);
  ch.relaxedWait();
  ch.relaxedWait(1000);
  out[0] = ch.poll();
}

struct Pair {
  float a, b;
};

__global__ void exerciseMemoryChannel(mscclppMemoryChannelDeviceHandle ch, uint64_t bytes, int* out) {
  const uint32_t t = threadIdx.x, n = blockDim.x;
  ch.put(1, 3, bytes, t, n);
  ch.put(16, bytes, t, n);
  ch.get(5, 7, bytes, t, n);
  ch.get(32, bytes, t, n);
  ch.write<int>(2, 7);
  ch.write<Pair>(3, Pair{1, 2});
  ch.write<uint4>(4, make_uint4(1, 2, 3, 4));
  out[0] = ch.read<int>(2) + static_cast<int>(ch.read<Pair>(3).a) + static_cast<int>(ch.read<uint4>(4).w);
  ch.putPackets(0, 8, bytes, t, n, 1);
  ch.putPackets<mscclppLL8Packet>(0, 4, bytes, t, n, 1);
  ch.unpackPackets(8, 0, bytes, t, n, 1);
  ch.unpackPackets<mscclppLL8Packet>(4, 0, bytes, t, n, 1, 1000);
  ch.getPackets(8, 0, bytes, t, n, 1);
  ch.getPackets<mscclppLL8Packet>(4, 0, bytes, t, n, 1, 1000);
  ch.signal();
  ch.relaxedSignal();
  ch.wait();
  ch.wait(1000);
  ch.relaxedWait();
  ch.relaxedWait(1000);
  out[1] = ch.poll();
  mscclppCopy(ch.dst, ch.src, bytes, t, n);
}

__global__ void exercisePortChannel(mscclppPortChannelDeviceHandle ch, int* out) {
  const uint64_t dst = 256, src = 512, size = 1024;
  ch.put(dst, src, size);
  ch.put(src, size);
  ch.signal();
  ch.putWithSignal(dst, src, size);
  ch.putWithSignal(src, size);
  ch.putWithSignalAndFlush(dst, src, size);
  ch.putWithSignalAndFlush(src, size);
  ch.flush();
  ch.flush(1000);
  ch.wait();
  ch.wait(1000);
  out[0] = ch.poll();
}
