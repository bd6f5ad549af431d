// legacy_device_check proves that the device half of include/mscclpp.h compiles under nvcc: the
// kernel calls every device function of mscclppDevConn and mscclppConcurrentFifo. It is compiled
// only (nvcc -c); running it would need a live connection and proxy.
#include <mscclpp.h>

// The device functions must not change the layout the host sees: the base, then the FIFO, nothing else.
static_assert(sizeof(mscclppBaseConn) == 48, "device view of mscclppBaseConn must match the host view");
static_assert(sizeof(mscclppConcurrentFifo) == 32, "device view of mscclppConcurrentFifo must match the host view");
static_assert(sizeof(mscclppDevConn) == sizeof(mscclppBaseConn) + sizeof(mscclppConcurrentFifo),
              "device view of mscclppDevConn must match the host view");
static_assert(sizeof(mscclppTrigger) == 16 && alignof(mscclppTrigger) == 16, "device view of mscclppTrigger");

__global__ void exerciseEveryDeviceFunction(mscclppDevConn* conns, uint64_t* slotOut) {
  mscclppDevConn& conn = conns[blockIdx.x];
  const uint64_t dst = 256, src = 512, size = 1024;
  conn.put(dst, src, size);
  conn.put(src, size);
  conn.signal();
  conn.putWithSignal(dst, src, size);
  conn.putWithSignal(src, size);
  conn.putWithSignalAndFlush(dst, src, size);
  conn.putWithSignalAndFlush(src, size);
  conn.flush();
  conn.wait();
  conn.epochIncrement();
  slotOut[blockIdx.x] = conn.fifo.push(mscclppData | mscclppFlag, dst, src, size);
}
