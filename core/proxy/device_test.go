package proxy

import (
	"runtime"
	"sync/atomic"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// The test device: Go stand-ins for the GPU side of include/mscclppfifo.h and include/mscclpp.h.
// mscclppConcurrentFifo::push and the mscclppDevConn device functions are reproduced line by line;
// where the GPU uses volatile accesses and one 128-bit store, the Go code uses sync/atomic, with
// value[1] stored before value[0] so that a reader of value[0] sees a complete trigger. Spins yield
// (runtime.Gosched) so tests behave on machines with few CPUs.

// testFifo is struct mscclppConcurrentFifo: the ring, the device-side tail the proxy publishes,
// the head counter shared by every connection of the rank, and this connection's id.
type testFifo struct {
	triggerFifo     []fifo.Trigger
	triggerFifoTail *atomic.Uint64
	triggerFifoHead *atomic.Uint64
	connID          uint64
}

// push is mscclppConcurrentFifo::push.
func (f *testFifo) push(typ fifo.TriggerType, dstDataOffset, srcDataOffset, dataSize uint64) uint64 {
	size := uint64(len(f.triggerFifo))
	slotNumber := f.triggerFifoHead.Add(1) - 1 // atomicAdd returns the old value
	for slotNumber >= f.triggerFifoTail.Load()+size {
		runtime.Gosched()
	}
	slot := &f.triggerFifo[slotNumber%size]
	for atomic.LoadUint64(&slot.Value[0]) != 0 {
		runtime.Gosched()
	}
	word0 := srcDataOffset<<fifo.BitsSize | dataSize
	word1 := (uint64(typ)<<fifo.BitsConnID|f.connID)<<fifo.BitsOffset | dstDataOffset
	atomic.StoreUint64(&slot.Value[1], word1)
	atomic.StoreUint64(&slot.Value[0], word0)
	return slotNumber
}

// kNonEmptyDataSize is mscclppDevConn::kNonEmptyDataSize.
const kNonEmptyDataSize = 1

// Indices of the two words of a signal epoch region (struct mscclppDevConnSignalEpochId).
const (
	epochDevice = 0
	epochProxy  = 1
)

// testDevConn is struct mscclppDevConn for one GPU thread (waitEpochID is per end, as on the GPU
// where wait() is not meant for concurrent callers).
type testDevConn struct {
	fifo               testFifo
	localSignalEpochID []uint64 // {device, proxy}
	waitEpochID        uint64
}

func (c *testDevConn) put(dstDataOffset, srcDataOffset, dataSize uint64) {
	c.fifo.push(fifo.Data, dstDataOffset, srcDataOffset, dataSize)
}

func (c *testDevConn) signal() {
	c.epochIncrement()
	c.fifo.push(fifo.Flag, 0, 0, kNonEmptyDataSize)
}

func (c *testDevConn) putWithSignal(dstDataOffset, srcDataOffset, dataSize uint64) {
	c.epochIncrement()
	c.fifo.push(fifo.Data|fifo.Flag, dstDataOffset, srcDataOffset, dataSize)
}

func (c *testDevConn) putWithSignalAndFlush(dstDataOffset, srcDataOffset, dataSize uint64) {
	c.epochIncrement()
	slotNumber := c.fifo.push(fifo.Data|fifo.Flag|fifo.Sync, dstDataOffset, srcDataOffset, dataSize)
	c.waitUntilConsumed(slotNumber)
}

func (c *testDevConn) flush() {
	slotNumber := c.fifo.push(fifo.Sync, 0, 0, kNonEmptyDataSize)
	c.waitUntilConsumed(slotNumber)
}

func (c *testDevConn) wait() {
	c.waitEpochID++
	for atomic.LoadUint64(&c.localSignalEpochID[epochProxy]) < c.waitEpochID {
		runtime.Gosched()
	}
}

func (c *testDevConn) epochIncrement() {
	atomic.AddUint64(&c.localSignalEpochID[epochDevice], 1)
}

func (c *testDevConn) waitUntilConsumed(slotNumber uint64) {
	size := uint64(len(c.fifo.triggerFifo))
	for atomic.LoadUint64(&c.fifo.triggerFifo[slotNumber%size].Value[0]) != 0 &&
		c.fifo.triggerFifoTail.Load() <= slotNumber {
		runtime.Gosched()
	}
}
