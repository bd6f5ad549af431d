package core

import (
	"errors"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// cudaIPC is the CUDA IPC transport: GPUs of one host reach each other's memory through
// cuIpcGetMemHandle/cuIpcOpenMemHandle (NVLink or PCIe), and a connection's data path is one
// CUDA stream on the local GPU whose copies the copy engines execute.
type cudaIPC struct{}

// address: a CUDA IPC endpoint is named by its process and GPU, which every Endpoint carries.
func (cudaIPC) address(*Context, EndpointConfig) (string, error) { return "", nil }

// register exports the allocation holding [ptr, ptr+size) on GPU ordinal. The context's registry
// keys an export by the allocation's base and the driver's buffer id, so memory freed and
// allocated again at the same address gets a handle of its own, never the old one.
func (cudaIPC) register(c *Context, ptr cuda.DevicePtr, size uint64, ordinal int) (RegisteredMemory, error) {
	if ordinal < 0 {
		if _, err := cuda.PointerMemoryType(ptr); errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrDriverNotFound) {
			return RegisteredMemory{}, err
		}
		return RegisteredMemory{}, fmt.Errorf("not CUDA device memory (CUDA IPC shares only cuMemAlloc'd memory, not host memory): %w", errs.ErrInvalidArgument)
	}
	g, err := c.gpu(ordinal)
	if err != nil {
		return RegisteredMemory{}, err
	}
	var handle cuda.IpcMemHandle
	var base cuda.DevicePtr
	err = g.do(func() error {
		var err error
		if base, err = allocationBase(ptr, size); err != nil {
			return err
		}
		id, err := cuda.PointerBufferID(base)
		if err != nil {
			return err
		}
		key := allocation{base, id}
		h, ok := c.exported[key]
		if !ok {
			if h, err = cuda.IpcGetMemHandle(base); err != nil {
				return err
			}
			c.exported[key] = h
		}
		handle = h
		return nil
	})
	if err != nil {
		return RegisteredMemory{}, fmt.Errorf("on GPU %d: %w", ordinal, err)
	}
	return RegisteredMemory{
		data:      ptr,
		size:      size,
		transport: TransportP2P,
		origin:    thisProcess(),
		device:    ordinal,
		addr:      ptr,
		handle:    handle,
		offset:    uint64(ptr - base),
		mappedOn:  notMapped,
	}, nil
}

// deregister: an export lasts as long as the allocation (the driver ends it with cuMemFree).
func (cudaIPC) deregister(*Context, RegisteredMemory) error {
	return fmt.Errorf("CUDA IPC exports last as long as the allocation: only host memory this process registered for IB or SHM can be deregistered: %w", errs.ErrInvalidArgument)
}

func (cudaIPC) open(h cuda.IpcMemHandle) (cuda.DevicePtr, error) { return cuda.IpcOpenMemHandle(h) }

func (cudaIPC) unmap(p cuda.DevicePtr) error { return cuda.IpcCloseMemHandle(p) }

func (cudaIPC) checkPeers(local, remote Endpoint, here origin) error {
	switch {
	case local.config.Device.Type != DeviceGPU || remote.config.Device.Type != DeviceGPU:
		return fmt.Errorf("CUDA IPC connects GPU endpoints only: %w", errs.ErrInvalidArgument)
	case !remote.origin.sameHost(here):
		return fmt.Errorf("the remote endpoint is on host %016x, this is host %016x: %w", remote.origin.host, here.host, ErrDifferentHost)
	}
	return nil
}

// connect enables peer access when remote is another GPU of this process, and gives the
// connection a stream of its own on local's GPU.
func (cudaIPC) connect(c *Context, local, remote Endpoint) (link, error) {
	if remote.origin.sameProcess(thisProcess()) {
		if err := c.enablePeerAccess(local.config.Device.ID, remote.config.Device.ID); err != nil {
			return nil, err
		}
	}
	g, err := c.gpu(local.config.Device.ID)
	if err != nil {
		return nil, err
	}
	var l link
	err = g.do(func() error {
		s, err := cuda.NewStream()
		l = streamLink{s}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("data path: %w", err)
	}
	return l, nil
}

// streamLink is a CUDA IPC connection's data path: its CUDA stream.
type streamLink struct{ stream cuda.Stream }

func (l streamLink) write(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, n uint64) error {
	return cuda.MemcpyAsync(dst.data+cuda.DevicePtr(dstOff), src.data+cuda.DevicePtr(srcOff), int(n), l.stream)
}

func (l streamLink) writeValue(dst RegisteredMemory, dstOff, value uint64) error {
	return cuda.StreamWriteValue64(l.stream, dst.data+cuda.DevicePtr(dstOff), value)
}

func (l streamLink) flushed() (bool, error) { return l.stream.Done() }

func (l streamLink) close() error { return l.stream.Destroy() }
