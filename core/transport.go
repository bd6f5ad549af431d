package core

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fabric"
)

// Transport names a way bytes travel between endpoints. It mirrors mscclppTransport_t of
// include/mscclpp.h, whose values it keeps.
type Transport int

// The transports. TransportP2P is CUDA IPC over NVLink or PCIe (transport_cudaipc.go);
// TransportIB (the network) and TransportSHM (processes of one host) go through libfabric
// (transport_fabric.go; GPU memory staged through host buffers, transport_staged.go). One this
// machine cannot serve is refused with ErrTransportUnavailable.
const (
	TransportP2P Transport = 0
	TransportSHM Transport = 1
	TransportIB  Transport = 2
)

func (t Transport) String() string {
	switch t {
	case TransportP2P:
		return "P2P"
	case TransportSHM:
		return "SHM"
	case TransportIB:
		return "IB"
	default:
		return fmt.Sprintf("Transport(%d)", int(t))
	}
}

// ErrTransportUnavailable: the transport cannot be served here: libfabric or its provider is
// missing, a named RDMA device was not found, or the caller does not implement it (the legacy
// API's SHM).
var ErrTransportUnavailable = errs.New(errs.ErrInvalidUsage, "transport not available")

// transport is what a Context needs from a way of moving GPU memory between processes of one host:
// making local memory reachable by peers, reaching a peer's memory, and the data path of a
// connection. Context keeps the one registry of the library's memory (what it exported, what it
// mapped, reference counts, which GPU) and calls a transport only for the transport's own part;
// every method runs with the GPU's context current on a locked thread. CUDA IPC (cudaIPC) is its
// implementation. The libfabric transports (transport_fabric.go: the network, shared memory)
// register host memory with their endpoint instead of mapping it (a peer's memory is reached by
// its key, never mapped) and make their own link, fabricLink.
type transport interface {
	// export returns the handle a peer passes to open to reach the allocation at base.
	export(base cuda.DevicePtr) (cuda.IpcMemHandle, error)
	// open makes a peer's allocation, named by the handle its export returned, usable here and
	// returns its address.
	open(h cuda.IpcMemHandle) (cuda.DevicePtr, error)
	// unmap releases what open made.
	unmap(p cuda.DevicePtr) error
	// connect makes the data path of a connection from local, an endpoint of this process, to
	// remote.
	connect(local, remote Endpoint) (link, error)
}

// link is the data path of one Connection, made by a transport: a CUDA stream for CUDA IPC
// (streamLink), the peer's address on the context's libfabric endpoint for the network and
// shared memory (fabricLink). Its operations are asynchronous and run in the order they were
// queued; the Connection has checked every range.
type link interface {
	// write queues a copy of n bytes (n > 0) from src at srcOff, memory of this process, to dst
	// at dstOff, the peer's memory.
	write(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, n uint64) error
	// writeValue queues, after every earlier write, an 8-byte store of value at dst+dstOff: the
	// signal that tells the peer the data before it has landed.
	writeValue(dst RegisteredMemory, dstOff, value uint64) error
	// flushed reports, without waiting, whether everything queued has completed.
	flushed() (bool, error)
	// close releases the path once its queued work completes.
	close() error
}

// transportFor returns the implementation of t, a transport of GPU memory, or an error naming
// what asked for it.
func transportFor(t Transport, what string) (transport, error) {
	switch t {
	case TransportP2P:
		return cudaIPC{}, nil
	case TransportIB, TransportSHM:
		return nil, fmt.Errorf("%s over %v: memory of a libfabric transport is reached through its endpoint (registered or staged), never exported or mapped: %w", what, t, ErrTransportUnavailable)
	default:
		return nil, fmt.Errorf("%s: unknown transport %d: %w", what, int(t), errs.ErrInvalidArgument)
	}
}

// CheckTransport refuses unknown transports (ErrInvalidArgument) and the libfabric ones where
// libfabric cannot be loaded or offers no provider for them (ErrTransportUnavailable), naming
// what asked in the error.
func CheckTransport(t Transport, what string) error {
	switch t {
	case TransportP2P:
		return nil
	case TransportIB:
		if _, err := fabric.NetworkProvider(); err != nil {
			return fmt.Errorf("%s over IB: %w: %w", what, ErrTransportUnavailable, err)
		}
		return nil
	case TransportSHM:
		if _, err := fabric.Providers(); err != nil {
			return fmt.Errorf("%s over SHM: %w: %w", what, ErrTransportUnavailable, err)
		}
		if !fabric.Has("shm") {
			return fmt.Errorf("%s over SHM: libfabric's shm provider is not available here: %w", what, ErrTransportUnavailable)
		}
		return nil
	default:
		return fmt.Errorf("%s: unknown transport %d: %w", what, int(t), errs.ErrInvalidArgument)
	}
}
