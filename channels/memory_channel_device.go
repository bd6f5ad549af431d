package channels

import "structs"

// BaseMemoryChannelDeviceHandle mirrors mscclppBaseMemoryChannelDeviceHandle of
// include/mscclpp/memory_channel_device.h.
type BaseMemoryChannelDeviceHandle struct {
	_         structs.HostLayout
	Semaphore MemorySemaphoreDeviceHandle
}

// MemoryChannelDeviceHandle mirrors mscclppMemoryChannelDeviceHandle of
// include/mscclpp/memory_channel_device.h.
type MemoryChannelDeviceHandle struct {
	_            structs.HostLayout
	Semaphore    MemorySemaphoreDeviceHandle
	Dst          uintptr
	Src          uintptr
	PacketBuffer uintptr
}
