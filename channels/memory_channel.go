package channels

import (
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// BaseMemoryChannel is a semaphore used by GPU threads directly: no memory attached. Its device
// handle's relaxedSignal/relaxedWait order execution only; signal/wait also order memory.
type BaseMemoryChannel struct {
	sema *core.Semaphore
}

// NewBaseMemoryChannel wraps sema.
func NewBaseMemoryChannel(sema *core.Semaphore) BaseMemoryChannel {
	return BaseMemoryChannel{sema: sema}
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

// NewMemoryChannel builds a memory channel over sema.
func NewMemoryChannel(sema *core.Semaphore, dst, src core.RegisteredMemory, packetBuffer cuda.DevicePtr) MemoryChannel {
	return MemoryChannel{sema: sema, dst: dst, src: src, packetBuffer: packetBuffer}
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
