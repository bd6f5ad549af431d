package channels

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// BaseMemoryChannel is a semaphore used by GPU threads directly: no memory attached. Its device
// handle's relaxedSignal/relaxedWait order execution only; signal/wait also order memory.
type BaseMemoryChannel struct {
	sema *core.Semaphore
}

// NewBaseMemoryChannel wraps sema, a semaphore of a CUDA IPC connection (checkMapped).
func NewBaseMemoryChannel(sema *core.Semaphore) (BaseMemoryChannel, error) {
	if err := checkMapped(sema); err != nil {
		return BaseMemoryChannel{}, err
	}
	return BaseMemoryChannel{sema: sema}, nil
}

// checkMapped refuses a semaphore whose connection is not CUDA IPC: memory channels reach the
// peer's memory with GPU loads and stores, so they work inside one host only.
func checkMapped(sema *core.Semaphore) error {
	if sema == nil {
		return fmt.Errorf("memory channel: nil semaphore: %w", core.ErrTransportUnavailable)
	}
	if t := sema.Connection().Local().Transport(); t != core.TransportP2P {
		return fmt.Errorf("memory channel over %v: memory channels reach the peer's GPU memory with loads and stores, inside one host (CUDA IPC, P2P); over %v use a port channel: %w",
			t, t, core.ErrTransportUnavailable)
	}
	return nil
}

// DeviceHandle is what kernels receive (mscclppBaseMemoryChannelDeviceHandle).
func (c BaseMemoryChannel) DeviceHandle() BaseMemoryChannelDeviceHandle {
	return BaseMemoryChannelDeviceHandle{Semaphore: memorySemaphoreHandle(c.sema)}
}

// MemoryChannel moves data with GPU threads through the peer's memory mapped here: dst is the
// peer's registered memory (opened here), src this side's, packetBuffer this side's scratch for
// incoming packets (0 when packets are not used).
type MemoryChannel struct {
	sema         *core.Semaphore
	dst, src     core.RegisteredMemory
	packetBuffer cuda.DevicePtr
}

// NewMemoryChannel builds a memory channel over sema, a semaphore of a CUDA IPC connection
// (across hosts, memory channels are refused: use a port channel).
func NewMemoryChannel(sema *core.Semaphore, dst, src core.RegisteredMemory, packetBuffer cuda.DevicePtr) (MemoryChannel, error) {
	if err := checkMapped(sema); err != nil {
		return MemoryChannel{}, err
	}
	return MemoryChannel{sema: sema, dst: dst, src: src, packetBuffer: packetBuffer}, nil
}

// DeviceHandle is what kernels receive (mscclppMemoryChannelDeviceHandle).
func (c MemoryChannel) DeviceHandle() MemoryChannelDeviceHandle {
	return MemoryChannelDeviceHandle{
		Semaphore:    memorySemaphoreHandle(c.sema),
		Dst:          uintptr(c.dst.Data()),
		Src:          uintptr(c.src.Data()),
		PacketBuffer: uintptr(c.packetBuffer),
	}
}

func memorySemaphoreHandle(s *core.Semaphore) MemorySemaphoreDeviceHandle {
	return MemorySemaphoreDeviceHandle{
		InboundToken:         uintptr(s.InboundToken()),
		OutboundToken:        uintptr(s.OutboundToken()),
		RemoteInboundToken:   uintptr(s.RemoteInboundToken()),
		ExpectedInboundToken: uintptr(s.ExpectedInboundToken()),
	}
}
