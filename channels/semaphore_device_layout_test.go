package channels

import (
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

func TestMemorySemaphoreDeviceHandleLayout(t *testing.T) {
	var s MemorySemaphoreDeviceHandle
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppMemorySemaphoreDeviceHandle)", GoValue: uint64(unsafe.Sizeof(s))},
		{CName: "alignof(mscclppMemorySemaphoreDeviceHandle)", GoValue: uint64(unsafe.Alignof(s))},
		{CName: "offsetof(mscclppMemorySemaphoreDeviceHandle, inboundToken)", GoValue: uint64(unsafe.Offsetof(s.InboundToken))},
		{CName: "offsetof(mscclppMemorySemaphoreDeviceHandle, outboundToken)", GoValue: uint64(unsafe.Offsetof(s.OutboundToken))},
		{CName: "offsetof(mscclppMemorySemaphoreDeviceHandle, remoteInboundToken)", GoValue: uint64(unsafe.Offsetof(s.RemoteInboundToken))},
		{CName: "offsetof(mscclppMemorySemaphoreDeviceHandle, expectedInboundToken)", GoValue: uint64(unsafe.Offsetof(s.ExpectedInboundToken))},
	})
}

func TestHostSemaphoreDeviceHandleLayout(t *testing.T) {
	var s HostSemaphoreDeviceHandle
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppHostSemaphoreDeviceHandle)", GoValue: uint64(unsafe.Sizeof(s))},
		{CName: "alignof(mscclppHostSemaphoreDeviceHandle)", GoValue: uint64(unsafe.Alignof(s))},
		{CName: "offsetof(mscclppHostSemaphoreDeviceHandle, inboundToken)", GoValue: uint64(unsafe.Offsetof(s.InboundToken))},
		{CName: "offsetof(mscclppHostSemaphoreDeviceHandle, expectedInboundToken)", GoValue: uint64(unsafe.Offsetof(s.ExpectedInboundToken))},
	})
}
