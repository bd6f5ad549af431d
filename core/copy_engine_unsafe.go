package core

// The copy engine publishes the proxy's tail through a word of host-pinned memory that an
// asynchronous copy reads later; Go reaches that word only through unsafe.Pointer, hence this
// file's name.

import (
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/proxy"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// drainTimeout bounds how long the proxy waits for its copies to complete before it reports the
// stream as stuck. A 1 GiB copy takes about 3 ms over NVLink.
const drainTimeout = 60 * time.Second

// copyEngine executes the proxy's work with the GPU's DMA engines: data copies and signal
// stores on one stream, in order; tail updates on a second stream so they never wait behind
// large copies.
type copyEngine struct {
	data, tail  cuda.Stream
	tailHost    unsafe.Pointer // one uint64, host-pinned
	tailHostDev cuda.DevicePtr // its device address
	tailDevice  cuda.DevicePtr // triggerFifoTail
	trace       *copyTrace     // nil unless MSCCLPP_PROXY_TRACE asks for it
}

// copyTrace times the engine's copies on the GPU and logs them at the first flushes
// (MSCCLPP_PROXY_TRACE): whether copies run slowly or the stream sits idle between them.
type copyTrace struct {
	flushes int64 // flushes still to log
	log     *slog.Logger
	copies  []tracedCopy // since the last flush
}

// tracedCopy is one copy and the timing events around it on the data stream.
type tracedCopy struct {
	dst, bytes uint64
	start, end cuda.Event
}

var _ proxy.Engine = (*copyEngine)(nil)

// newCopyEngine creates the engine's streams in the current context; with MSCCLPP_PROXY_TRACE
// set it times its copies and logs them to log.
func newCopyEngine(tailDevice cuda.DevicePtr, log *slog.Logger) (e *copyEngine, err error) {
	e = &copyEngine{tailDevice: tailDevice}
	if n := config.ProxyTrace.Get(); n > 0 {
		e.trace = &copyTrace{flushes: n, log: log}
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, e.close())
		}
	}()
	if e.data, err = cuda.NewStream(); err != nil {
		return e, fmt.Errorf("proxy data stream: %w", err)
	}
	if e.tail, err = cuda.NewStream(); err != nil {
		return e, fmt.Errorf("proxy tail stream: %w", err)
	}
	if e.tailHost, err = cuda.MemHostAlloc(8); err != nil {
		return e, fmt.Errorf("proxy tail word: %w", err)
	}
	if e.tailHostDev, err = cuda.MemHostGetDevicePointer(e.tailHost); err != nil {
		return e, fmt.Errorf("proxy tail word: %w", err)
	}
	return e, nil
}

func (e *copyEngine) Copy(dst, src, n uint64) error {
	if e.trace == nil || e.trace.flushes == 0 {
		return cuda.MemcpyAsync(cuda.DevicePtr(dst), cuda.DevicePtr(src), int(n), e.data)
	}
	c := tracedCopy{dst: dst, bytes: n}
	var err error
	if c.start, err = cuda.NewTimingEvent(); err != nil {
		return err
	}
	if c.end, err = cuda.NewTimingEvent(); err != nil {
		return errors.Join(err, c.start.Destroy())
	}
	e.trace.copies = append(e.trace.copies, c)
	return errors.Join(c.start.Record(e.data), cuda.MemcpyAsync(cuda.DevicePtr(dst), cuda.DevicePtr(src), int(n), e.data),
		c.end.Record(e.data))
}

// WriteValue queues the signal store on the data stream, after the data it announces.
func (e *copyEngine) WriteValue(dst, value uint64) error {
	return cuda.StreamWriteValue64(e.data, cuda.DevicePtr(dst), value)
}

// Drain polls the data stream until it is empty, so that a stuck stream becomes an error after
// drainTimeout instead of a hang; with tracing on, it then logs the copies since the last Drain.
func (e *copyEngine) Drain() error {
	deadline := time.Now().Add(drainTimeout)
	for polls := 0; ; polls++ {
		done, err := e.data.Done()
		if err != nil {
			return err
		}
		if done {
			break
		}
		// Look at the clock only now and then: a query is about a microsecond.
		if polls%1024 == 1023 && time.Now().After(deadline) {
			return fmt.Errorf("proxy copies did not complete within %v", drainTimeout)
		}
	}
	if e.trace != nil {
		return e.trace.report()
	}
	return nil
}

// report logs the copies since the last flush, all completed, and frees their events: start is
// from the first of them, gap the time since the previous copy ended (signal stores, or nothing
// queued).
func (t *copyTrace) report() error {
	if len(t.copies) == 0 {
		return nil
	}
	var errList []error
	first := t.copies[0].start
	for i, c := range t.copies {
		start, err1 := cuda.ElapsedTime(first, c.start)
		took, err2 := cuda.ElapsedTime(c.start, c.end)
		var gap time.Duration
		var err3 error
		if i > 0 {
			gap, err3 = cuda.ElapsedTime(t.copies[i-1].end, c.start)
		}
		if err := errors.Join(err1, err2, err3); err != nil {
			errList = append(errList, err)
			continue
		}
		t.log.Info("proxy copy", "flushesLeft", t.flushes-1, "copy", i, "dst", fmt.Sprintf("%#x", c.dst),
			"bytes", c.bytes, "startUs", start.Microseconds(), "tookUs", took.Microseconds(),
			"gapUs", gap.Microseconds(), "GBps", float64(c.bytes)/max(took.Seconds(), 1e-9)/1e9)
	}
	errList = append(errList, t.free())
	t.flushes--
	return errors.Join(errList...)
}

// free destroys the events of the copies not yet reported.
func (t *copyTrace) free() error {
	var errList []error
	for _, c := range t.copies {
		errList = append(errList, c.start.Destroy(), c.end.Destroy())
	}
	t.copies = t.copies[:0]
	return errors.Join(errList...)
}

// PublishTail stores tail in the pinned word and queues its copy to triggerFifoTail. A later
// store may overtake an earlier copy; the GPU then sees a newer tail, which is as good.
func (e *copyEngine) PublishTail(tail uint64) error {
	atomic.StoreUint64((*uint64)(e.tailHost), tail)
	return cuda.MemcpyAsync(e.tailDevice, e.tailHostDev, 8, e.tail)
}

// close waits for both streams and releases them. The context is current.
func (e *copyEngine) close() error {
	var errList []error
	for _, s := range []*cuda.Stream{&e.data, &e.tail} {
		if *s != (cuda.Stream{}) {
			errList = append(errList, s.Synchronize(), s.Destroy())
			*s = cuda.Stream{}
		}
	}
	if e.trace != nil {
		errList = append(errList, e.trace.free())
	}
	if e.tailHost != nil {
		errList = append(errList, cuda.MemFreeHost(e.tailHost))
		e.tailHost = nil
	}
	return errors.Join(errList...)
}
