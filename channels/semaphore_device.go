package channels

import "structs"

// MemorySemaphoreDeviceHandle mirrors mscclppMemorySemaphoreDeviceHandle of
// include/mscclpp/semaphore_device.h.
type MemorySemaphoreDeviceHandle struct {
	_                    structs.HostLayout
	InboundToken         uintptr
	OutboundToken        uintptr
	RemoteInboundToken   uintptr
	ExpectedInboundToken uintptr
}

// HostSemaphoreDeviceHandle mirrors mscclppHostSemaphoreDeviceHandle of
// include/mscclpp/semaphore_device.h.
type HostSemaphoreDeviceHandle struct {
	_                    structs.HostLayout
	InboundToken         uintptr
	ExpectedInboundToken uintptr
}
