package core

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Transport names a way bytes travel between endpoints. It mirrors mscclppTransport_t of
// include/mscclpp.h, whose values it keeps.
type Transport int

// The transports. Only TransportP2P (CUDA IPC over NVLink or PCIe, transport_cudaipc.go) is
// implemented; the others are refused with ErrTransportUnavailable.
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

// ErrTransportUnavailable: the transport is not implemented here (IB: no RDMA device was found;
// SHM).
var ErrTransportUnavailable = errs.New(errs.ErrInvalidUsage, "transport not available")

// transport is what a Context needs from one way of moving bytes: making local memory reachable
// by peers, reaching a peer's memory, and the data path of a connection. Context keeps the one
// registry of the library's memory (what it exported, what it mapped, reference counts, which
// GPU) and calls a transport only for the transport's own part; every method runs with the
// GPU's context current on a locked thread. CUDA IPC (cudaIPC) is the implementation today; a
// network transport is meant to be a second one, with its memory keys in the handle bytes.
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

// link is the data path of one Connection. Its operations are asynchronous and run in the order
// they were queued.
type link interface {
	// write queues a copy of n bytes (n > 0) from src, local memory, to dst, memory of the peer
	// usable here.
	write(dst, src cuda.DevicePtr, n int) error
	// writeValue queues, after every earlier write, an 8-byte store of value at dst: the signal
	// that tells the peer the data before it has landed.
	writeValue(dst cuda.DevicePtr, value uint64) error
	// flushed reports, without waiting, whether everything queued has completed.
	flushed() (bool, error)
	// close releases the path once its queued work completes.
	close() error
}

// transportFor returns the implementation of t, or an error naming what asked for it.
func transportFor(t Transport, what string) (transport, error) {
	switch t {
	case TransportP2P:
		return cudaIPC{}, nil
	case TransportIB:
		return nil, fmt.Errorf("%s over IB: no RDMA device was found (InfiniBand is not supported by this build): %w", what, ErrTransportUnavailable)
	case TransportSHM:
		return nil, fmt.Errorf("%s over SHM: the shared-memory transport is not implemented: %w", what, ErrTransportUnavailable)
	default:
		return nil, fmt.Errorf("%s: unknown transport %d: %w", what, int(t), errs.ErrInvalidArgument)
	}
}

// CheckTransport refuses the transports this build does not implement (ErrTransportUnavailable)
// and unknown ones (ErrInvalidArgument), naming what asked in the error.
func CheckTransport(t Transport, what string) error {
	_, err := transportFor(t, what)
	return err
}
