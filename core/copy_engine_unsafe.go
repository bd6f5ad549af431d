package core

// The copy engine publishes the proxy's tail through a word of host-pinned memory that an
// asynchronous copy reads later; Go reaches that word only through unsafe.Pointer, hence this
// file's name.

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/proxy"
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
}

var _ proxy.Engine = (*copyEngine)(nil)

// newCopyEngine creates the engine's streams in the current context.
func newCopyEngine(tailDevice cuda.DevicePtr) (e *copyEngine, err error) {
	e = &copyEngine{tailDevice: tailDevice}
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
	return cuda.MemcpyAsync(cuda.DevicePtr(dst), cuda.DevicePtr(src), int(n), e.data)
}

// WriteValue queues the signal store on the data stream, after the data it announces.
func (e *copyEngine) WriteValue(dst, value uint64) error {
	return cuda.StreamWriteValue64(e.data, cuda.DevicePtr(dst), value)
}

// Drain polls the data stream until it is empty, so that a stuck stream becomes an error after
// drainTimeout instead of a hang.
func (e *copyEngine) Drain() error {
	deadline := time.Now().Add(drainTimeout)
	for polls := 0; ; polls++ {
		done, err := e.data.Done()
		if err != nil || done {
			return err
		}
		// Look at the clock only now and then: a query is about a microsecond.
		if polls%1024 == 1023 && time.Now().After(deadline) {
			return fmt.Errorf("proxy copies did not complete within %v", drainTimeout)
		}
	}
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
	if e.tailHost != nil {
		errList = append(errList, cuda.MemFreeHost(e.tailHost))
		e.tailHost = nil
	}
	return errors.Join(errList...)
}
