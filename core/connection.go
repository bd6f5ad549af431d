package core

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// ErrWaitCanceled: a wait (Connection.Flush, Future.Get) ended with its context before what it
// waited for; the error also matches the context's error.
var ErrWaitCanceled = errs.New(errs.ErrSystem, "wait canceled")

// Connection is this side of a connection between two endpoints, made by Context.Connect. The
// host-side operations (Write, UpdateAndSync, Flush) run in order on the connection's data path,
// which its transport made (for CUDA IPC, a stream of its own on the local GPU); they are safe for
// concurrent use, in which case their relative order is unspecified. The context's Close releases
// the data path.
type Connection struct {
	ctx    *Context
	local  Endpoint
	remote Endpoint
	gpu    *contextGPU
	link   link
}

// Local returns the endpoint of this side.
func (c *Connection) Local() Endpoint { return c.local }

// Remote returns the peer's endpoint.
func (c *Connection) Remote() Endpoint { return c.remote }

// Context returns the context that made the connection and owns its stream.
func (c *Connection) Context() *Context { return c.ctx }

func (c *Connection) String() string {
	return fmt.Sprintf("connection %016x -> %016x (%v over %v)", c.local.id, c.remote.id, c.local.config.Device, c.local.config.Transport)
}

// Write queues a copy of size bytes from src at srcOffset to dst at dstOffset on the
// connection's stream and returns; Flush waits for it. Both memories must be usable in this
// process (registered here or unmarshaled here) and the ranges must lie within them.
func (c *Connection) Write(dst RegisteredMemory, dstOffset uint64, src RegisteredMemory, srcOffset, size uint64) error {
	what := fmt.Sprintf("%v: write %d bytes to offset %d of %v from offset %d of %v", c, size, dstOffset, dst, srcOffset, src)
	if err := checkRange(dst, dstOffset, size); err != nil {
		return fmt.Errorf("%s: destination: %w", what, err)
	}
	if err := checkRange(src, srcOffset, size); err != nil {
		return fmt.Errorf("%s: source: %w", what, err)
	}
	if size == 0 {
		return nil
	}
	if size > math.MaxInt {
		return fmt.Errorf("%s: size too large: %w", what, errs.ErrInvalidArgument)
	}
	return c.onStream(what, func() error {
		return c.link.write(dst, dstOffset, src, srcOffset, size)
	})
}

// UpdateAndSync queues, after the work already on the connection's stream, an 8-byte store of
// value at dst+dstOffset (8-byte aligned), so that the peer sees it after the data of earlier
// Writes. It does not wait; Flush does.
func (c *Connection) UpdateAndSync(dst RegisteredMemory, dstOffset uint64, value uint64) error {
	what := fmt.Sprintf("%v: store %d at offset %d of %v", c, value, dstOffset, dst)
	if err := checkRange(dst, dstOffset, 8); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if (uint64(dst.addr)+dstOffset)%8 != 0 {
		return fmt.Errorf("%s: address %#x is not 8-byte aligned: %w", what, uint64(dst.addr)+dstOffset, errs.ErrInvalidArgument)
	}
	return c.onStream(what, func() error {
		return c.link.writeValue(dst, dstOffset, value)
	})
}

// Flush waits until everything queued on the connection has completed, or ctx ends (an error
// matching ErrWaitCanceled and ctx's error; the work keeps running).
func (c *Connection) Flush(ctx context.Context) error {
	what := fmt.Sprintf("%v: flush", c)
	delay := 10 * time.Microsecond
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		var done bool
		err := c.onStream(what, func() error {
			var err error
			done, err = c.link.flushed()
			return err
		})
		if err != nil || done {
			return err
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w: %w", what, ErrWaitCanceled, ctx.Err())
		case <-timer.C:
		}
		delay = min(2*delay, time.Millisecond)
	}
}

// onStream runs f with the connection's GPU context current, unless the context is closed.
func (c *Connection) onStream(what string, f func() error) error {
	c.ctx.life.RLock()
	defer c.ctx.life.RUnlock()
	if c.ctx.closed {
		return fmt.Errorf("%s: %w", what, ErrContextClosed)
	}
	run := f
	if c.gpu != nil { // CUDA IPC: driver calls on the GPU's context
		run = func() error { return c.gpu.do(f) }
	}
	if err := run(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// checkRange refuses [off, off+size) outside m, and memory not usable in this process.
func checkRange(m RegisteredMemory, off, size uint64) error {
	if m.size == 0 || m.data == 0 && !isFabric(m.transport) { // a peer's libfabric memory is reached by its key
		return fmt.Errorf("memory is not registered or mapped in this process: %w", errs.ErrInvalidArgument)
	}
	if off > m.size || size > m.size-off {
		return fmt.Errorf("%d bytes at offset %d do not fit %d bytes: %w", size, off, m.size, errs.ErrInvalidArgument)
	}
	return nil
}
