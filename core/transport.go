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

// transport is one way memory travels between processes. Context keeps the one registry of the
// library's memory (what it exported, what it mapped, reference counts, which GPU) and the
// checks every transport shares, and calls its transport for the transport's own part. Two
// implement it: cudaIPC (transport_cudaipc.go: GPUs of one host map each other's memory) and
// libfabric (transport_fabric.go, host memory registered with a libfabric endpoint and reached
// by its key; transport_staged.go, GPU memory staged through host buffers). The methods that
// take the asking context run with its mu held and make a GPU's context current themselves
// where they call the driver (contextGPU.do); open and unmap run with it current already;
// checkPeers looks only at the endpoints.
type transport interface {
	// address returns what an endpoint of cfg carries for its peers to reach it: the libfabric
	// endpoint's address, or "" where the endpoint's process and GPU say it all (CUDA IPC).
	address(c *Context, cfg EndpointConfig) (string, error)
	// register makes size bytes at ptr reachable by peers: memory of GPU ordinal, or host memory
	// when ordinal is negative.
	register(c *Context, ptr cuda.DevicePtr, size uint64, ordinal int) (RegisteredMemory, error)
	// deregister ends register's work for m, memory of this process, where the transport can
	// end it before the context closes.
	deregister(c *Context, m RegisteredMemory) error
	// open makes a peer's allocation, named by the handle its register returned, usable on the
	// current GPU context and returns its address; unmap releases it. A transport whose links
	// reach peer memory by its key (libfabric) maps nothing and refuses both.
	open(h cuda.IpcMemHandle) (cuda.DevicePtr, error)
	unmap(p cuda.DevicePtr) error
	// checkPeers refuses a connection from local to remote, endpoints of this transport, that it
	// cannot make from the process here (devices it does not connect, a peer out of reach).
	checkPeers(local, remote Endpoint, here origin) error
	// connect makes the data path of a connection from local, an endpoint of this process, to
	// remote.
	connect(c *Context, local, remote Endpoint) (link, error)
}

// link is the data path of one Connection, made by a transport: a CUDA stream for CUDA IPC
// (streamLink), the peer's address on the context's libfabric endpoint for the network and
// shared memory (fabricLink or signalLink, stagedLink). Its operations are asynchronous and run
// in the order they were queued; the Connection has checked every range.
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

// pendingWrite is a write a link has yet to queue: n bytes from src at srcOff to dst at dstOff.
type pendingWrite struct {
	dst       RegisteredMemory
	dstOff    uint64
	src       RegisteredMemory
	srcOff, n uint64
}

// signalledWriter is a link that queues a write and the signal after it (write, then writeValue)
// as one operation of its own (signalLink: a fabricLink with signals as remote CQ data).
type signalledWriter interface {
	writeWithSignal(w pendingWrite, sig RegisteredMemory, sigOff, value uint64) error
}

// transportOf returns the implementation of t, or an error naming what asked for it.
func transportOf(t Transport, what string) (transport, error) {
	switch t {
	case TransportP2P:
		return cudaIPC{}, nil
	case TransportIB, TransportSHM:
		return libfabric{t}, nil
	default:
		return nil, fmt.Errorf("%s: unknown transport %d: %w", what, int(t), errs.ErrInvalidArgument)
	}
}

// isFabric reports whether t travels through libfabric: TransportIB (the network:
// MSCCLPP_NET_PROVIDER, else the best provider the machine offers) and TransportSHM (the shm
// provider, processes of one host). Peer memory of such a transport is reached through the
// connection by its key, never mapped here.
func isFabric(t Transport) bool { return t == TransportIB || t == TransportSHM }

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
