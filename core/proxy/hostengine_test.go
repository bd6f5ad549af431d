package proxy

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Host memory with fake device addresses. Regions are registered before the proxy starts and never
// change afterwards, so lookups need no lock. Addresses are plain numbers: nothing converts them
// to pointers, so go vet and the race detector see ordinary slice accesses.

const (
	fakeAddressBase = 0x7f00_0000_0000 // first fake address
	fakeAddressGap  = 1 << 16          // unmapped guard band between regions
	wordSize        = 8
)

// region is either bytes (data buffers) or words (signal epoch counters, which the test device
// reads and writes atomically, so the engine copies them word by word with sync/atomic).
type region struct {
	base  uint64
	bytes []byte
	words []uint64
}

func (r *region) size() uint64 {
	if r.words != nil {
		return uint64(len(r.words)) * wordSize
	}
	return uint64(len(r.bytes))
}

type hostMemory struct {
	regions []*region
	next    uint64
}

func newHostMemory() *hostMemory { return &hostMemory{next: fakeAddressBase} }

func (m *hostMemory) add(r *region) uint64 {
	r.base = m.next
	m.next += (r.size() + fakeAddressGap) &^ (fakeAddressGap - 1)
	m.next += fakeAddressGap
	m.regions = append(m.regions, r)
	return r.base
}

// allocBytes registers n bytes and returns their fake address.
func (m *hostMemory) allocBytes(n int) (uint64, []byte) {
	r := &region{bytes: make([]byte, n)}
	return m.add(r), r.bytes
}

// allocWords registers n uint64 words and returns their fake address.
func (m *hostMemory) allocWords(n int) (uint64, []uint64) {
	r := &region{words: make([]uint64, n)}
	return m.add(r), r.words
}

// resolve finds the region holding all of [addr, addr+n).
func (m *hostMemory) resolve(addr, n uint64) (*region, uint64, error) {
	for _, r := range m.regions {
		if addr >= r.base && addr-r.base < r.size() {
			off := addr - r.base
			if !fits(off, n, r.size()) {
				return nil, 0, fmt.Errorf("[%#x, +%#x) runs past the region at %#x of %d bytes", addr, n, r.base, r.size())
			}
			return r, off, nil
		}
	}
	return nil, 0, fmt.Errorf("[%#x, +%#x) is not registered memory", addr, n)
}

// copyOp is one queued copy, or, when src is nil, one queued store of value.
type copyOp struct {
	dst, src   *region
	dOff, sOff uint64
	n          uint64
	value      uint64
	seq        uint64 // 1-based enqueue order
}

func (op copyOp) execute() {
	switch {
	case op.src == nil: // WriteValue into a word region; checked in WriteValue
		atomic.StoreUint64(&op.dst.words[op.dOff/wordSize], op.value)
	case op.dst.bytes != nil && op.src.bytes != nil:
		copy(op.dst.bytes[op.dOff:op.dOff+op.n], op.src.bytes[op.sOff:op.sOff+op.n])
	default: // words to words; checked in Copy
		for i := uint64(0); i < op.n/wordSize; i++ {
			v := atomic.LoadUint64(&op.src.words[op.sOff/wordSize+i])
			atomic.StoreUint64(&op.dst.words[op.dOff/wordSize+i], v)
		}
	}
}

// copyRecord is what the engine's trace keeps of one Copy or WriteValue call (src 0, value set).
type copyRecord struct {
	dst, src, n, value uint64
}

const engineQueueDepth = 1 << 12

// hostEngine is an Engine over hostMemory. Copies go to a worker goroutine that executes them in
// order, later than Copy returns (like a CUDA stream); Drain waits until the worker has caught up.
type hostEngine struct {
	mem *hostMemory

	ops       chan copyOp
	workerEnd chan struct{}
	enqueued  atomic.Uint64 // copies accepted by Copy
	completed atomic.Uint64 // copies executed by the worker
	slowCopy  bool          // the worker yields before each copy, widening every race window
	signalLag time.Duration // the worker pauses after each write into a word region (a signal)

	published atomic.Uint64 // the device-side triggerFifoTail

	failCopy atomic.Uint64 // when non-zero, the Copy call with this 1-based number fails
	calls    atomic.Uint64 // Copy calls, failed or not

	mu        sync.Mutex
	trace     []copyRecord          // Copy calls, when tracing
	tracing   bool                  //
	onPublish func(tail uint64)     // called on the proxy goroutine, before the store
	badAccess error                 // first copy outside registered memory
	onDrain   func(enqueued uint64) // called when a Drain has completed
}

var errInjected = errors.New("injected engine failure")

func newHostEngine(mem *hostMemory) *hostEngine {
	e := &hostEngine{mem: mem, ops: make(chan copyOp, engineQueueDepth), workerEnd: make(chan struct{})}
	go e.worker()
	return e
}

func (e *hostEngine) worker() {
	defer close(e.workerEnd)
	for op := range e.ops {
		if e.slowCopy {
			runtime.Gosched()
		}
		op.execute()
		e.completed.Store(op.seq)
		if e.signalLag > 0 && op.dst.words != nil {
			time.Sleep(e.signalLag) // later data lands only after the peer had time to look
		}
	}
}

// close stops the worker; call it after the proxy has stopped.
func (e *hostEngine) close() {
	close(e.ops)
	<-e.workerEnd
}

func (e *hostEngine) Copy(dst, src, n uint64) error {
	call := e.calls.Add(1)
	if e.failCopy.Load() == call {
		return fmt.Errorf("copy %d: %w", call, errInjected)
	}
	if e.tracing {
		e.mu.Lock()
		e.trace = append(e.trace, copyRecord{dst: dst, src: src, n: n})
		e.mu.Unlock()
	}
	d, dOff, err := e.mem.resolve(dst, n)
	if err == nil {
		var s *region
		var sOff uint64
		if s, sOff, err = e.mem.resolve(src, n); err == nil {
			if (d.words == nil) != (s.words == nil) || (d.words != nil && (dOff|sOff|n)%wordSize != 0) {
				err = fmt.Errorf("copy between a byte and a word region or unaligned word copy")
			} else {
				seq := e.enqueued.Add(1)
				e.ops <- copyOp{dst: d, src: s, dOff: dOff, sOff: sOff, n: n, seq: seq}
				return nil
			}
		}
	}
	e.mu.Lock()
	if e.badAccess == nil {
		e.badAccess = fmt.Errorf("Copy(%#x, %#x, %d): %w", dst, src, n, err)
	}
	e.mu.Unlock()
	return err
}

func (e *hostEngine) WriteValue(dst, value uint64) error {
	call := e.calls.Add(1)
	if e.failCopy.Load() == call {
		return fmt.Errorf("write %d: %w", call, errInjected)
	}
	if e.tracing {
		e.mu.Lock()
		e.trace = append(e.trace, copyRecord{dst: dst, n: wordSize, value: value})
		e.mu.Unlock()
	}
	d, dOff, err := e.mem.resolve(dst, wordSize)
	if err == nil && (d.words == nil || dOff%wordSize != 0) {
		err = fmt.Errorf("value write into a byte region or an unaligned word")
	}
	if err != nil {
		e.mu.Lock()
		if e.badAccess == nil {
			e.badAccess = fmt.Errorf("WriteValue(%#x, %d): %w", dst, value, err)
		}
		e.mu.Unlock()
		return err
	}
	seq := e.enqueued.Add(1)
	e.ops <- copyOp{dst: d, dOff: dOff, n: wordSize, value: value, seq: seq}
	return nil
}

func (e *hostEngine) Drain() error {
	want := e.enqueued.Load()
	for e.completed.Load() < want {
		runtime.Gosched()
	}
	if e.onDrain != nil {
		e.onDrain(want)
	}
	return nil
}

func (e *hostEngine) PublishTail(tail uint64) error {
	if e.onPublish != nil {
		e.onPublish(tail)
	}
	e.published.Store(tail)
	return nil
}

func (e *hostEngine) accessError() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.badAccess
}

func (e *hostEngine) traced() []copyRecord {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]copyRecord(nil), e.trace...)
}

// nopEngine accepts everything and does nothing; the allocation test and the benchmark use it to
// measure the proxy alone.
type nopEngine struct {
	copies, drains atomic.Uint64
	published      atomic.Uint64
}

func (e *nopEngine) Copy(dst, src, n uint64) error      { e.copies.Add(1); return nil }
func (e *nopEngine) WriteValue(dst, value uint64) error { e.copies.Add(1); return nil }
func (e *nopEngine) Drain() error                       { e.drains.Add(1); return nil }
func (e *nopEngine) PublishTail(tail uint64) error      { e.published.Store(tail); return nil }
