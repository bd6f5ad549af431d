package channels

import "structs"

// PortChannelDeviceHandle mirrors mscclppPortChannelDeviceHandle of
// include/mscclpp/port_channel_device.h.
type PortChannelDeviceHandle struct {
	_         structs.HostLayout
	ChannelID uint32
	Reserved  uint32
	Semaphore HostSemaphoreDeviceHandle
	Fifo      FifoDeviceHandle
}
