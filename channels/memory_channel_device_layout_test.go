package channels

import (
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

func TestBaseMemoryChannelDeviceHandleLayout(t *testing.T) {
	var c BaseMemoryChannelDeviceHandle
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppBaseMemoryChannelDeviceHandle)", GoValue: uint64(unsafe.Sizeof(c))},
		{CName: "alignof(mscclppBaseMemoryChannelDeviceHandle)", GoValue: uint64(unsafe.Alignof(c))},
		{CName: "offsetof(mscclppBaseMemoryChannelDeviceHandle, semaphore)", GoValue: uint64(unsafe.Offsetof(c.Semaphore))},
	})
}

func TestMemoryChannelDeviceHandleLayout(t *testing.T) {
	var c MemoryChannelDeviceHandle
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppMemoryChannelDeviceHandle)", GoValue: uint64(unsafe.Sizeof(c))},
		{CName: "alignof(mscclppMemoryChannelDeviceHandle)", GoValue: uint64(unsafe.Alignof(c))},
		{CName: "offsetof(mscclppMemoryChannelDeviceHandle, semaphore)", GoValue: uint64(unsafe.Offsetof(c.Semaphore))},
		{CName: "offsetof(mscclppMemoryChannelDeviceHandle, dst)", GoValue: uint64(unsafe.Offsetof(c.Dst))},
		{CName: "offsetof(mscclppMemoryChannelDeviceHandle, src)", GoValue: uint64(unsafe.Offsetof(c.Src))},
		{CName: "offsetof(mscclppMemoryChannelDeviceHandle, packetBuffer)", GoValue: uint64(unsafe.Offsetof(c.PacketBuffer))},
	})
}
