package channels

import (
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

func TestPortChannelDeviceHandleLayout(t *testing.T) {
	var c PortChannelDeviceHandle
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppPortChannelDeviceHandle)", GoValue: uint64(unsafe.Sizeof(c))},
		{CName: "alignof(mscclppPortChannelDeviceHandle)", GoValue: uint64(unsafe.Alignof(c))},
		{CName: "offsetof(mscclppPortChannelDeviceHandle, channelId)", GoValue: uint64(unsafe.Offsetof(c.ChannelID))},
		{CName: "offsetof(mscclppPortChannelDeviceHandle, reserved)", GoValue: uint64(unsafe.Offsetof(c.Reserved))},
		{CName: "offsetof(mscclppPortChannelDeviceHandle, semaphore)", GoValue: uint64(unsafe.Offsetof(c.Semaphore))},
		{CName: "offsetof(mscclppPortChannelDeviceHandle, fifo)", GoValue: uint64(unsafe.Offsetof(c.Fifo))},
	})
}
