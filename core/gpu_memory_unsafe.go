package core

// This file holds the legacy communicator's GPU state; the sizes of the device objects it
// allocates come from unsafe.Sizeof/Offsetof of their Go mirrors.

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// Sizes of the per-connection device objects (see include/mscclpp.h).
const (
	signalPairBytes = int(unsafe.Sizeof(SignalEpochID{})) // mscclppDevConnSignalEpochId
	waitEpochBytes  = 8                                   // uint64_t waitEpochId
	proxyFieldShift = uint64(unsafe.Offsetof(SignalEpochID{}.Proxy))
)

// gpuState is what a legacy communicator owns on its GPU: the proxy FIFO (ring, head, tail,
// proxy), the signal and wait counters of its connections, and the handles of peer memory it
// opened. All of it is released by close.
type gpuState struct {
	device cuda.Device
	ctx    cuda.Context
	stream cuda.Stream // for setup-time memsets

	fifo *ProxyFifo // MSCCLPP_PROXY_FIFO_SIZE triggers and the proxy serving them

	allocs   []cuda.DevicePtr                     // device allocations to free
	exported map[cuda.DevicePtr]cuda.IpcMemHandle // allocation base -> its IPC handle
	opened   map[cuda.IpcMemHandle]cuda.DevicePtr // peer allocation -> where it is mapped here
}

// newGPUState retains dev's primary context, makes it current on the calling (locked) thread and
// creates the proxy FIFO.
func newGPUState(dev cuda.Device, log *slog.Logger) (g *gpuState, err error) {
	g = &gpuState{
		device:   dev,
		exported: map[cuda.DevicePtr]cuda.IpcMemHandle{},
		opened:   map[cuda.IpcMemHandle]cuda.DevicePtr{},
	}
	if g.ctx, err = dev.RetainPrimaryContext(); err != nil {
		return nil, fmt.Errorf("GPU %d: %w", dev, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.close())
		}
	}()
	if err = g.ctx.SetCurrent(); err != nil {
		return g, err
	}
	if g.stream, err = cuda.NewStream(); err != nil {
		return g, err
	}
	if g.fifo, err = NewProxyFifo(dev, fifo.FifoSize, log); err != nil {
		return g, err
	}
	return g, nil
}

// lockThreadWithContext locks the calling goroutine to its OS thread and makes g's context
// current there, for the driver calls that follow; the returned function unlocks the thread. A
// failure to make the context current shows up as the error of the next driver call.
func lockThreadWithContext(g *gpuState) (unlock func()) {
	runtime.LockOSThread()
	_ = g.ctx.SetCurrent()
	return runtime.UnlockOSThread
}

// allocZeroed allocates n bytes of device memory, zeroed before it returns. The context is current.
func (g *gpuState) allocZeroed(n int) (cuda.DevicePtr, error) {
	p, err := cuda.MemAlloc(n)
	if err != nil {
		return 0, err
	}
	g.allocs = append(g.allocs, p)
	if err := cuda.MemsetD8Async(p, 0, n, g.stream); err != nil {
		return 0, err
	}
	if err := g.stream.Synchronize(); err != nil {
		return 0, err
	}
	return p, nil
}

// export returns the IPC handle of the allocation holding p and p's offset in it.
func (g *gpuState) export(p cuda.DevicePtr) (cuda.IpcMemHandle, uint64, error) {
	base, _, err := cuda.MemGetAddressRange(p)
	if err != nil {
		return cuda.IpcMemHandle{}, 0, fmt.Errorf("find the allocation of %#x: %w", uint64(p), err)
	}
	h, ok := g.exported[base]
	if !ok {
		if h, err = cuda.IpcGetMemHandle(base); err != nil {
			return cuda.IpcMemHandle{}, 0, fmt.Errorf("export allocation %#x: %w", uint64(base), err)
		}
		g.exported[base] = h
	}
	return h, uint64(p - base), nil
}

// open maps the peer allocation h here (once per communicator) and returns its address.
func (g *gpuState) open(h cuda.IpcMemHandle) (cuda.DevicePtr, error) {
	if p, ok := g.opened[h]; ok {
		return p, nil
	}
	p, err := cuda.IpcOpenMemHandle(h)
	if err != nil {
		return 0, err
	}
	g.opened[h] = p
	return p, nil
}

// close releases everything, making the context current on the calling thread first.
func (g *gpuState) close() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := g.ctx.SetCurrent(); err != nil {
		return fmt.Errorf("release GPU %d memory: %w", g.device, err)
	}
	var errList []error
	if g.fifo != nil {
		errList = append(errList, g.fifo.Close())
	}
	for _, p := range g.opened {
		errList = append(errList, cuda.IpcCloseMemHandle(p))
	}
	for _, p := range g.allocs {
		errList = append(errList, cuda.MemFree(p))
	}
	if g.stream != (cuda.Stream{}) {
		errList = append(errList, g.stream.Destroy())
	}
	errList = append(errList, g.ctx.Release())
	g.opened, g.allocs, g.fifo, g.stream = nil, nil, nil, cuda.Stream{}
	if err := errors.Join(errList...); err != nil {
		return fmt.Errorf("release GPU %d memory: %w", g.device, err)
	}
	return nil
}
