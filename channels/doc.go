// Package channels builds the channels GPU kernels communicate through, and holds their device
// handles. A BaseMemoryChannel or MemoryChannel wraps a core.Semaphore (and, for data, the peer's
// registered memory opened here): GPU threads signal and copy through the peer's memory directly.
// A ProxyService serves PortChannels: GPU threads push requests into its FIFO and its proxy
// (core.ProxyFifo, the same FIFO/proxy the legacy device connections run on) executes them with
// the copy engine. Call ProxyService.Start before kernels use its port channels and Stop after.
//
// The device handles (*_device.go) are Go mirrors of the structs in include/mscclpp/*_device.h,
// which document every field and the device methods; pointer fields hold device or mapped-host
// addresses, never Go pointers. Layout tests pin each mirror to its header through internal/abi.
package channels
