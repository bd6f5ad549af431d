// Package channels holds the device handles of memory and port channels and, later, the host
// objects that build them.
//
// The device handles (*_device.go) are Go mirrors of the structs in include/mscclpp/*_device.h,
// which document every field and the device methods; pointer fields hold device or mapped-host
// addresses, never Go pointers. Layout tests pin each mirror to its header through internal/abi.
package channels
