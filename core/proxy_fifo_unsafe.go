package core

// A ProxyFifo owns the trigger ring in host-pinned memory that GPU threads write and the proxy
// reads; Go reaches that memory through unsafe.Pointer and unsafe.Slice, hence this file's name.

import (
	"errors"
	"fmt"
	"log/slog"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/core/proxy"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// fifoCounterBytes holds a FIFO's head (at 0) and tail replica (at 8), in device memory.
const fifoCounterBytes = 16

// ProxyFifo is a trigger ring on one GPU and the proxy that serves it: the host-pinned,
// device-mapped ring, the head and tail words in device memory, the CUDA copy engine and the
// proxy goroutine. The legacy communicator (128 slots) and the ProxyService (512 by default) both
// run on it. Its methods are not safe for concurrent use; its owner serializes them.
type ProxyFifo struct {
	device cuda.Device
	ctx    cuda.Context
	size   int
	log    *slog.Logger

	ringHost   unsafe.Pointer // size triggers
	ringDevice cuda.DevicePtr
	counters   cuda.DevicePtr // head at +0, tail replica at +8

	engine  *copyEngine
	proxy   *proxy.Proxy // created by the first Start
	conns   []proxy.Conn // the table, grown by AddConns
	running bool
}

// NewProxyFifo allocates a ring of size triggers (a power of two) on dev and the copy engine's
// streams. The proxy itself starts with Start.
func NewProxyFifo(dev cuda.Device, size int, log *slog.Logger) (f *ProxyFifo, err error) {
	if size < 4 || size&(size-1) != 0 {
		return nil, fmt.Errorf("proxy FIFO of %d triggers: want a power of two >= 4: %w", size, ErrBadFifoSize)
	}
	if log == nil {
		log = logging.Logger()
	}
	f = &ProxyFifo{device: dev, size: size, log: log}
	if f.ctx, err = dev.RetainPrimaryContext(); err != nil {
		return nil, fmt.Errorf("proxy FIFO on GPU %d: %w", dev, err)
	}
	defer func(f *ProxyFifo) { // f as it is now: a failing return sets the result to nil
		if err != nil {
			err = errors.Join(err, f.release())
		}
	}(f)
	err = f.onGPU(func() error {
		ringBytes := size * int(unsafe.Sizeof(fifo.Trigger{}))
		var err error
		if f.ringHost, err = cuda.MemHostAlloc(ringBytes); err != nil {
			return fmt.Errorf("trigger ring: %w", err)
		}
		clear(unsafe.Slice((*byte)(f.ringHost), ringBytes))
		if f.ringDevice, err = cuda.MemHostGetDevicePointer(f.ringHost); err != nil {
			return fmt.Errorf("trigger ring: %w", err)
		}
		if f.counters, err = cuda.MemAlloc(fifoCounterBytes); err != nil {
			return fmt.Errorf("FIFO head and tail: %w", err)
		}
		if f.engine, err = newCopyEngine(f.counters+8, log); err != nil {
			return err
		}
		return cuda.MemZero(f.counters, fifoCounterBytes, f.engine.data)
	})
	if err != nil {
		return nil, fmt.Errorf("proxy FIFO on GPU %d: %w", dev, err)
	}
	return f, nil
}

// ErrBadFifoSize: a FIFO size that is not a power of two of at least 4.
var ErrBadFifoSize = errs.New(errs.ErrInvalidArgument, "bad FIFO size")

// onGPU runs fn on a locked thread with the FIFO's context pushed, then pops it, so the calling
// thread keeps whatever context it had.
func (f *ProxyFifo) onGPU(fn func() error) error { return f.ctx.Do(fn) }

// Device is the GPU the FIFO lives on.
func (f *ProxyFifo) Device() cuda.Device { return f.device }

// Size is the number of trigger slots.
func (f *ProxyFifo) Size() int { return f.size }

// Ring is the device address of the trigger ring; Head and TailReplica those of the counters.
func (f *ProxyFifo) Ring() cuda.DevicePtr        { return f.ringDevice }
func (f *ProxyFifo) Head() cuda.DevicePtr        { return f.counters }
func (f *ProxyFifo) TailReplica() cuda.DevicePtr { return f.counters + 8 }

// Conns is the number of entries in the proxy's table.
func (f *ProxyFifo) Conns() int { return len(f.conns) }

// AddConns appends entries to the proxy's table; their ids (trigger connIds) follow the existing
// ones. The proxy must be stopped.
func (f *ProxyFifo) AddConns(conns ...proxy.Conn) error {
	if f.running {
		return fmt.Errorf("add proxy connections: %w", proxy.ErrRunning)
	}
	if f.proxy != nil {
		if err := f.proxy.AddConns(conns...); err != nil {
			return err
		}
	}
	f.conns = append(f.conns, conns...)
	return nil
}

// SetConn replaces entry id of the proxy's table (see proxy.Proxy.SetConn). The proxy must be
// stopped.
func (f *ProxyFifo) SetConn(id int, c proxy.Conn) error {
	if f.running {
		return fmt.Errorf("replace proxy connection %d: %w", id, proxy.ErrRunning)
	}
	if id < 0 || id >= len(f.conns) {
		return fmt.Errorf("replace proxy connection %d of %d: %w", id, len(f.conns), proxy.ErrConfig)
	}
	if f.proxy != nil {
		if err := f.proxy.SetConn(id, c); err != nil {
			return err
		}
	}
	f.conns[id] = c
	return nil
}

// Start starts (or resumes) the proxy: one goroutine on a locked OS thread with the GPU's context
// current, pinned to the GPU's CPUs. The tail and the signal counts carry on across Stop/Start.
func (f *ProxyFifo) Start() error {
	if f.running {
		return nil
	}
	if f.proxy == nil {
		p, err := proxy.New(proxy.Config{
			Slots:  unsafe.Slice((*fifo.Trigger)(f.ringHost), f.size),
			Conns:  f.conns,
			Engine: f.engine,
			InitThread: func() error {
				if err := f.ctx.SetCurrent(); err != nil {
					return err
				}
				pinThreadToGPU(f.device, f.log)
				return nil
			},
			Logger: f.log,
		})
		if err != nil {
			return err
		}
		f.proxy = p
	}
	if err := f.proxy.Start(); err != nil {
		return err
	}
	f.running = true
	return nil
}

// Stop stops the proxy and waits for its copies. Stopping a stopped FIFO does nothing.
func (f *ProxyFifo) Stop() error {
	if !f.running {
		return nil
	}
	f.running = false
	return f.proxy.Stop()
}

// Running reports whether the proxy runs.
func (f *ProxyFifo) Running() bool { return f.running }

// Err is the proxy's first engine (CUDA) error, if any.
func (f *ProxyFifo) Err() error {
	if f.proxy == nil {
		return nil
	}
	return f.proxy.Err()
}

// ConnErr is why the proxy failed connection id (a trigger outside its registered memory), or nil.
func (f *ProxyFifo) ConnErr(id int) error {
	if f.proxy == nil {
		return nil
	}
	return f.proxy.ConnErr(id)
}

// Stats are the proxy's counters (zero before the first Start).
func (f *ProxyFifo) Stats() proxy.Stats {
	if f.proxy == nil {
		return proxy.Stats{}
	}
	return f.proxy.Stats()
}

// Close stops the proxy and frees the ring, the counters and the engine.
func (f *ProxyFifo) Close() error {
	return errors.Join(f.Stop(), f.release())
}

func (f *ProxyFifo) release() error {
	err := f.onGPU(func() error {
		var errList []error
		if f.engine != nil {
			errList = append(errList, f.engine.close())
		}
		if f.counters != 0 {
			errList = append(errList, cuda.MemFree(f.counters))
		}
		if f.ringHost != nil {
			errList = append(errList, cuda.MemFreeHost(f.ringHost))
		}
		return errors.Join(errList...)
	})
	f.engine, f.counters, f.ringHost, f.proxy = nil, 0, nil, nil
	return errors.Join(err, f.ctx.Release())
}
