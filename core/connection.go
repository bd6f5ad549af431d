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
	fail := func(err error) error { // the text is built only on failure: Write is on the fast path
		return fmt.Errorf("%v: write %d bytes to offset %d of %v from offset %d of %v: %w", c, size, dstOffset, dst, srcOffset, src, err)
	}
	if err := checkWrite(dst, dstOffset, src, srcOffset, size); err != nil {
		return fail(err)
	}
	if size == 0 {
		return nil
	}
	if err := c.onStream(func() error { return c.link.write(dst, dstOffset, src, srcOffset, size) }); err != nil {
		return fail(err)
	}
	return nil
}

// UpdateAndSync queues, after the work already on the connection's stream, an 8-byte store of
// value at dst+dstOffset (8-byte aligned), so that the peer sees it after the data of earlier
// Writes. It does not wait; Flush does. On libfabric links to host memory that carry signals as
// remote CQ data (tcp, shm) the peer stores the value when it progresses, as a step up from the
// word's value where it can (transport_fabric_signals.go): a word that holds 2^18 or more must be
// signalled by one connection only, and not changed by its owner in between.
func (c *Connection) UpdateAndSync(dst RegisteredMemory, dstOffset uint64, value uint64) error {
	fail := func(err error) error {
		return fmt.Errorf("%v: store %d at offset %d of %v: %w", c, value, dstOffset, dst, err)
	}
	if err := checkSignalWord(dst, dstOffset); err != nil {
		return fail(err)
	}
	if err := c.onStream(func() error { return c.link.writeValue(dst, dstOffset, value) }); err != nil {
		return fail(err)
	}
	return nil
}

// WriteWithSignal queues Write(dst, dstOffset, src, srcOffset, size) and then
// UpdateAndSync(signal, signalOffset, value), the pair a port channel's putWithSignal makes. On
// libfabric links that carry signals as remote CQ data the two are one operation of the provider
// (docs/ARCHITECTURE.md), which roughly halves a small message's latency; elsewhere it is the two
// calls. It does not wait; Flush does.
func (c *Connection) WriteWithSignal(dst RegisteredMemory, dstOffset uint64, src RegisteredMemory, srcOffset, size uint64,
	signal RegisteredMemory, signalOffset, value uint64) error {
	sw, ok := c.link.(signalledWriter)
	if !ok || size == 0 {
		if err := c.Write(dst, dstOffset, src, srcOffset, size); err != nil {
			return err
		}
		return c.UpdateAndSync(signal, signalOffset, value)
	}
	fail := func(err error) error {
		return fmt.Errorf("%v: write %d bytes to offset %d of %v from offset %d of %v, then store %d at offset %d of %v: %w",
			c, size, dstOffset, dst, srcOffset, src, value, signalOffset, signal, err)
	}
	if err := checkWrite(dst, dstOffset, src, srcOffset, size); err != nil {
		return fail(err)
	}
	if err := checkSignalWord(signal, signalOffset); err != nil {
		return fail(fmt.Errorf("signal: %w", err))
	}
	w := pendingWrite{dst: dst, dstOff: dstOffset, src: src, srcOff: srcOffset, n: size}
	if err := c.onStream(func() error { return sw.writeWithSignal(w, signal, signalOffset, value) }); err != nil {
		return fail(err)
	}
	return nil
}

// Flush waits until everything queued on the connection has completed, or ctx ends (an error
// matching ErrWaitCanceled and ctx's error; the work keeps running).
func (c *Connection) Flush(ctx context.Context) error {
	return c.waitFor(ctx, "flush", func() (bool, error) { return c.link.flushed() })
}

// WaitLanded waits until the bytes of every Write queued so far are in the peer's memory, or ctx
// ends (as Flush). On most links that is Flush; on GPU memory staged through host buffers (a
// libfabric provider that cannot reach GPU memory) Flush returns once the bytes have left, before
// the peer has copied them into its GPU, and WaitLanded also waits for those copies. A peer that
// learns of the write by other means than a later UpdateAndSync on this connection (a bootstrap
// barrier, MPI) needs it.
//
// It waits for the writes queued when it was called, not for those other goroutines (a proxy)
// queue on the connection while it waits.
func (c *Connection) WaitLanded(ctx context.Context) error {
	if l, ok := c.link.(landingLink); ok {
		var mark uint64
		if err := c.onStream(func() error { mark = l.landingMark(); return nil }); err != nil {
			return fmt.Errorf("%v: wait for the writes to land: %w", c, err)
		}
		return c.waitFor(ctx, "wait for the writes to land", func() (bool, error) { return l.landed(mark) })
	}
	return c.Flush(ctx)
}

// landingLink is a link whose writes complete here before they land in the peer's memory.
type landingLink interface {
	// landingMark marks the writes queued so far, for landed.
	landingMark() uint64
	// landed reports, without waiting, whether every write queued before mark is in the peer's
	// memory.
	landed(mark uint64) (bool, error)
}

// waitFor polls done on the connection's data path, with growing pauses, until it reports true
// or fails, or ctx ends.
func (c *Connection) waitFor(ctx context.Context, what string, done func() (bool, error)) error {
	delay := 10 * time.Microsecond
	timer := time.NewTimer(delay)
	defer timer.Stop()
	for {
		var ok bool
		err := c.onStream(func() error {
			var err error
			ok, err = done()
			return err
		})
		if err != nil {
			return fmt.Errorf("%v: %s: %w", c, what, err)
		}
		if ok {
			return nil
		}
		timer.Reset(delay)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%v: %s: %w: %w", c, what, ErrWaitCanceled, ctx.Err())
		case <-timer.C:
		}
		delay = min(2*delay, time.Millisecond)
	}
}

// onStream runs f with the connection's GPU context current, unless the context is closed.
func (c *Connection) onStream(f func() error) error {
	c.ctx.life.RLock()
	defer c.ctx.life.RUnlock()
	if c.ctx.closed {
		return ErrContextClosed
	}
	if c.gpu != nil { // CUDA IPC: driver calls on the GPU's context
		return c.gpu.do(f)
	}
	return f()
}

// checkWrite refuses a write of size bytes from src at srcOff to dst at dstOff that does not fit
// either memory, or that is too large.
func checkWrite(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, size uint64) error {
	if err := checkRange(dst, dstOff, size); err != nil {
		return fmt.Errorf("destination: %w", err)
	}
	if err := checkRange(src, srcOff, size); err != nil {
		return fmt.Errorf("source: %w", err)
	}
	if size > math.MaxInt {
		return fmt.Errorf("size too large: %w", errs.ErrInvalidArgument)
	}
	return nil
}

// checkSignalWord refuses a signal word that is not 8 bytes of m at an 8-byte aligned address.
func checkSignalWord(m RegisteredMemory, off uint64) error {
	if err := checkRange(m, off, 8); err != nil {
		return err
	}
	if (uint64(m.addr)+off)%8 != 0 {
		return fmt.Errorf("address %#x is not 8-byte aligned: %w", uint64(m.addr)+off, errs.ErrInvalidArgument)
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
