/*
 * mscclpp/port_channel_device.h: port channels, where GPU threads ask a host proxy to move data
 * (copy engine, RDMA) and to signal the peer, through a trigger FIFO (mscclpp/fifo_device.h).
 *
 * Offsets and sizes are in bytes and must fit the trigger fields (32 bits each); srcOffset is
 * into this side's source memory, dstOffset into the peer's destination memory, both fixed when
 * the channel was built. Every trigger carries channelId as its connId. Each method is called by
 * one thread; different threads may use the channel at once (the FIFO takes many producers), but
 * wait() and poll() update a plain counter, so one thread at a time calls those.
 *
 * Spin bounds: the methods that only queue (put, signal, putWithSignal) and putWithSignalAndFlush
 * spin without bound while the ring is full or the request is pending, as the legacy header does
 * (their overloads leave no room for a defaulted bound); flush() and wait() take maxSpinCount
 * (see mscclpp/device.h), and fifo.push / fifo.sync can be called directly with one.
 */
#ifndef MSCCLPP_PORT_CHANNEL_DEVICE_H_
#define MSCCLPP_PORT_CHANNEL_DEVICE_H_

#include <mscclpp/device.h>
#include <mscclpp/fifo_device.h>
#include <mscclpp/semaphore_device.h>

typedef struct mscclppPortChannelDeviceHandle {
  uint32_t channelId;                        /* the proxy's table index, carried as every trigger's connId */
  uint32_t reserved;                         /* zero */
  mscclppHostSemaphoreDeviceHandle semaphore; /* signalled by the peer's proxy */
  mscclppFifoDeviceHandle fifo;              /* the proxy's trigger ring */

#if defined(__CUDACC__)
  /* Queues a copy of size bytes from src+srcOffset to the peer's dst+dstOffset; returns once
   * queued (the source is in use until flush()). The push releases the thread's earlier writes
   * (mscclppFifoDeviceHandle::push); spins only while the ring is full (unbounded).
   * size 0 queues nothing. */
  MSCCLPP_DEVICE_INLINE void put(uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    if (size == 0) return;
    fifo.push(MSCCLPP_TRIGGER_DATA, dstOffset, srcOffset, size, channelId);
  }

  /* put() with the same offset on both sides. */
  MSCCLPP_DEVICE_INLINE void put(uint64_t offset, uint64_t size) { put(offset, offset, size); }

  /* Queues a signal: the peer's proxy-written semaphore advances once every earlier request of
   * this channel has landed. Size field MSCCLPP_TRIGGER_NO_DATA_SIZE. Releases the thread's earlier
   * writes; spins only while the ring is full (unbounded). */
  MSCCLPP_DEVICE_INLINE void signal() {
    fifo.push(MSCCLPP_TRIGGER_FLAG, 0, 0, MSCCLPP_TRIGGER_NO_DATA_SIZE, channelId);
  }

  /* put() then signal(), as one trigger (a signal alone when size is 0). */
  MSCCLPP_DEVICE_INLINE void putWithSignal(uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    pushRequest(MSCCLPP_TRIGGER_DATA | MSCCLPP_TRIGGER_FLAG, dstOffset, srcOffset, size);
  }

  /* putWithSignal() with the same offset on both sides. */
  MSCCLPP_DEVICE_INLINE void putWithSignal(uint64_t offset, uint64_t size) {
    putWithSignal(offset, offset, size);
  }

  /* putWithSignal() then flush(), as one trigger: returns once the proxy has completed it and every
   * earlier request of the FIFO (then the source may be reused). Spins without bound (ring full,
   * then the completion); acquire fence after. */
  MSCCLPP_DEVICE_INLINE void putWithSignalAndFlush(uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    const uint64_t number =
        pushRequest(MSCCLPP_TRIGGER_DATA | MSCCLPP_TRIGGER_FLAG | MSCCLPP_TRIGGER_SYNC, dstOffset, srcOffset, size);
    fifo.sync(number);
  }

  /* putWithSignalAndFlush() with the same offset on both sides. */
  MSCCLPP_DEVICE_INLINE void putWithSignalAndFlush(uint64_t offset, uint64_t size) {
    putWithSignalAndFlush(offset, offset, size);
  }

  /* Returns once every earlier request of the FIFO has completed (source buffers may be reused):
   * a MSCCLPP_TRIGGER_SYNC trigger, then mscclppFifoDeviceHandle::sync (acquire fence after).
   * Spins, each bounded by maxSpinCount. */
  MSCCLPP_DEVICE_INLINE void flush(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) {
    const uint64_t number =
        fifo.push(MSCCLPP_TRIGGER_SYNC, 0, 0, MSCCLPP_TRIGGER_NO_DATA_SIZE, channelId, maxSpinCount);
    fifo.sync(number, maxSpinCount);
  }

  /* mscclppHostSemaphoreDeviceHandle::wait(): waits for the peer's next signal (acquire); spins,
   * bounded by maxSpinCount. */
  MSCCLPP_DEVICE_INLINE void wait(int64_t maxSpinCount = MSCCLPP_SPIN_UNBOUNDED) { semaphore.wait(maxSpinCount); }

  /* mscclppHostSemaphoreDeviceHandle::poll(): consumes the peer's next signal if it has arrived
   * (acquire); never blocks. */
  MSCCLPP_DEVICE_INLINE bool poll() { return semaphore.poll(); }

 private:
  /* Pushes a request of kind `type`; with size 0 the data bit is dropped and the size field is
   * MSCCLPP_TRIGGER_NO_DATA_SIZE, so the trigger moves nothing and its fst stays non-zero. */
  MSCCLPP_DEVICE_INLINE uint64_t pushRequest(uint64_t type, uint64_t dstOffset, uint64_t srcOffset, uint64_t size) {
    if (size == 0) {
      type &= ~static_cast<uint64_t>(MSCCLPP_TRIGGER_DATA);
      size = MSCCLPP_TRIGGER_NO_DATA_SIZE;
      dstOffset = 0;
      srcOffset = 0;
    }
    return fifo.push(type, dstOffset, srcOffset, size, channelId);
  }

 public:
#endif
} mscclppPortChannelDeviceHandle;

MSCCLPP_STATIC_ASSERT(sizeof(mscclppPortChannelDeviceHandle) == 56, "mscclppPortChannelDeviceHandle is 56 bytes");

#endif /* MSCCLPP_PORT_CHANNEL_DEVICE_H_ */
