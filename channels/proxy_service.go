package channels

import (
	"fmt"
	"sync"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/proxy"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// DefaultFifoSize is the ProxyService's FIFO size when none is given.
const DefaultFifoSize = 512

// SemaphoreID and MemoryID name what was added to a ProxyService.
type (
	SemaphoreID uint32
	MemoryID    uint32
)

// Errors of the proxy service.
var (
	// ErrUnknownID: a semaphore or memory id that the service did not hand out.
	ErrUnknownID = errs.New(errs.ErrInvalidArgument, "unknown proxy service id")
	// ErrServiceRunning: the call needs the proxy stopped.
	ErrServiceRunning = errs.New(errs.ErrInvalidUsage, "proxy service is running")
	// ErrServiceClosed: the service was closed.
	ErrServiceClosed = errs.New(errs.ErrInvalidUsage, "proxy service is closed")
)

// ProxyService serves port channels: GPU threads push put/signal/flush requests into its FIFO and
// its proxy executes them with the GPU's copy engines, on the same FIFO/proxy implementation as the
// legacy device connections (core.ProxyFifo). All its port channels live on one GPU, the one of the
// first semaphore given to PortChannel, where the FIFO is created. Safe for concurrent use.
type ProxyService struct {
	mu         sync.Mutex
	fifoSize   int
	semaphores []*core.Semaphore
	memories   []core.RegisteredMemory
	fifo       *core.ProxyFifo // created by the first PortChannel
	closed     bool
}

// NewProxyService returns a stopped service whose FIFO will hold fifoSize requests (0 means
// DefaultFifoSize; otherwise a power of two of at least 4). Requests beyond the FIFO size wait on
// the GPU until the proxy has room.
func NewProxyService(fifoSize int) (*ProxyService, error) {
	if fifoSize == 0 {
		fifoSize = DefaultFifoSize
	}
	if fifoSize < 4 || fifoSize&(fifoSize-1) != 0 {
		return nil, fmt.Errorf("proxy service FIFO of %d requests: want a power of two >= 4: %w", fifoSize, core.ErrBadFifoSize)
	}
	return &ProxyService{fifoSize: fifoSize}, nil
}

// AddSemaphore adds a semaphore whose peer signals through its own proxy (a port channel's
// semaphore); use a semaphore for port channels or for memory channels, not both.
func (s *ProxyService) AddSemaphore(sema *core.Semaphore) SemaphoreID {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.semaphores = append(s.semaphores, sema)
	return SemaphoreID(len(s.semaphores) - 1)
}

// AddMemory adds a registered memory, local or a peer's opened here.
func (s *ProxyService) AddMemory(mem core.RegisteredMemory) MemoryID {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.memories = append(s.memories, mem)
	return MemoryID(len(s.memories) - 1)
}

// PortChannel makes a channel that copies from memory src to memory dst with the copy engine and
// signals the peer through semaphore sema. The proxy must be stopped.
func (s *ProxyService) PortChannel(sema SemaphoreID, dst, src MemoryID) (PortChannel, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return PortChannel{}, ErrServiceClosed
	}
	if int(sema) >= len(s.semaphores) {
		return PortChannel{}, fmt.Errorf("port channel: semaphore %d: %w", sema, ErrUnknownID)
	}
	if int(dst) >= len(s.memories) || int(src) >= len(s.memories) {
		return PortChannel{}, fmt.Errorf("port channel: memory %d or %d: %w", dst, src, ErrUnknownID)
	}
	if s.fifo != nil && s.fifo.Running() {
		return PortChannel{}, fmt.Errorf("port channel: stop the proxy service first: %w", ErrServiceRunning)
	}
	semaphore := s.semaphores[sema]
	dev := cuda.Device(semaphore.Connection().Local().Device().ID)
	if s.fifo == nil {
		f, err := core.NewProxyFifo(dev, s.fifoSize, logging.Logger())
		if err != nil {
			return PortChannel{}, fmt.Errorf("port channel: %w", err)
		}
		s.fifo = f
	} else if s.fifo.Device() != dev {
		return PortChannel{}, fmt.Errorf("port channel: semaphore %d is on GPU %d but the service's FIFO is on GPU %d: %w",
			sema, dev, s.fifo.Device(), errs.ErrInvalidArgument)
	}
	dstMem, srcMem := s.memories[dst], s.memories[src]
	id := s.fifo.Conns()
	pc := proxy.Conn{LocalSize: srcMem.Size(), RemoteSize: dstMem.Size(), SignalID: int(sema), Peer: -1, Tag: id}
	if semaphore.Connection().Local().Transport() == core.TransportP2P {
		pc.LocalBuf, pc.RemoteBuf = uint64(srcMem.Data()), uint64(dstMem.Data())
		pc.RemoteSignal = uint64(semaphore.RemoteInboundToken())
	} else { // across hosts: the peer's memory is not mapped; the connection carries the channel
		route, err := core.NewProxyRoute(semaphore, dstMem, srcMem)
		if err != nil {
			return PortChannel{}, fmt.Errorf("port channel: %w", err)
		}
		pc.Route = route
	}
	err := s.fifo.AddConns(pc)
	if err != nil {
		return PortChannel{}, fmt.Errorf("port channel: %w", err)
	}
	return PortChannel{handle: PortChannelDeviceHandle{
		ChannelID: uint32(id),
		Semaphore: HostSemaphoreDeviceHandle{
			InboundToken:         uintptr(semaphore.InboundToken()),
			ExpectedInboundToken: uintptr(semaphore.ExpectedInboundToken()),
		},
		Fifo: FifoDeviceHandle{
			Triggers:    uintptr(s.fifo.Ring()),
			TailReplica: uintptr(s.fifo.TailReplica()),
			Head:        uintptr(s.fifo.Head()),
			Size:        uint32(s.fifo.Size()),
		},
	}}, nil
}

// Start starts the proxy; call it before kernels use the port channels. Starting a running
// service, or one without port channels, does nothing.
func (s *ProxyService) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrServiceClosed
	}
	if s.fifo == nil {
		return nil
	}
	return s.fifo.Start()
}

// Stop stops the proxy after the kernels are done; stopping a stopped service does nothing.
func (s *ProxyService) Stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fifo == nil {
		return nil
	}
	return s.fifo.Stop()
}

// Err is the proxy's first CUDA error, if any.
func (s *ProxyService) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fifo == nil {
		return nil
	}
	return s.fifo.Err()
}

// Close stops the proxy and frees the FIFO. The semaphores and memories stay their owners'.
func (s *ProxyService) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.fifo == nil {
		return nil
	}
	err := s.fifo.Close()
	s.fifo = nil
	return err
}

// PortChannel is a channel served by a ProxyService.
type PortChannel struct {
	handle PortChannelDeviceHandle
}

// DeviceHandle is what kernels receive (mscclppPortChannelDeviceHandle).
func (c PortChannel) DeviceHandle() PortChannelDeviceHandle { return c.handle }
