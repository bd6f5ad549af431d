package cuda

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// DevicePtr is an address in the CUDA unified address space (CUdeviceptr).
type DevicePtr uint64

// IpcMemHandle names a device allocation to other processes (CUipcMemHandle). It is plain bytes,
// to be sent as is.
type IpcMemHandle [IpcMemHandleSize]byte

// The memory calls below act in the calling thread's current context: see Context.SetCurrent.

func checkSize(op string, size int) error {
	if size <= 0 {
		return fmt.Errorf("%s: size %d: %w", op, size, errs.ErrInvalidArgument)
	}
	return nil
}

// MemAlloc allocates size bytes of device memory.
func MemAlloc(size int) (DevicePtr, error) {
	if err := checkSize("cuMemAlloc", size); err != nil {
		return 0, err
	}
	if err := initDriver(); err != nil {
		return 0, err
	}
	return cuMemAlloc(size)
}

// MemAllocZeroed allocates size bytes of device memory and zeroes them on s, returning once they
// are zero. The memory is freed again if zeroing fails.
func MemAllocZeroed(size int, s Stream) (DevicePtr, error) {
	p, err := MemAlloc(size)
	if err != nil {
		return 0, err
	}
	if err := MemZero(p, size, s); err != nil {
		return 0, errors.Join(err, MemFree(p))
	}
	return p, nil
}

// MemZero sets n bytes at p to zero on s and waits until they are.
func MemZero(p DevicePtr, n int, s Stream) error {
	if err := MemsetD8Async(p, 0, n, s); err != nil {
		return err
	}
	return s.Synchronize()
}

// MemFree frees memory MemAlloc returned.
func MemFree(p DevicePtr) error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuMemFree(p)
}

// MemHostAlloc allocates size bytes of page-locked host memory that every context can use
// (CU_MEMHOSTALLOC_PORTABLE) and that is mapped into the device address space
// (CU_MEMHOSTALLOC_DEVICEMAP): MemHostGetDevicePointer gives its device address.
func MemHostAlloc(size int) (unsafe.Pointer, error) {
	if err := checkSize("cuMemHostAlloc", size); err != nil {
		return nil, err
	}
	if err := initDriver(); err != nil {
		return nil, err
	}
	return cuMemHostAlloc(size, hostAllocPortable|hostAllocDeviceMap)
}

// MemFreeHost frees memory MemHostAlloc returned.
func MemFreeHost(p unsafe.Pointer) error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuMemFreeHost(p)
}

// MemHostGetDevicePointer returns the device address of host memory MemHostAlloc returned.
func MemHostGetDevicePointer(p unsafe.Pointer) (DevicePtr, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	return cuMemHostGetDevicePointer(p)
}

// MemGetAddressRange returns the base and size of the allocation that contains p.
func MemGetAddressRange(p DevicePtr) (base DevicePtr, size int, err error) {
	if err := initDriver(); err != nil {
		return 0, 0, err
	}
	return cuMemGetAddressRange(p)
}

// PointerMemoryType returns where the memory at p lives.
func PointerMemoryType(p DevicePtr) (MemoryType, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	var t uint32 // CUmemorytype, an unsigned int
	if err := cuPointerGetAttribute(unsafe.Pointer(&t), attrPointerMemoryType, p); err != nil {
		return 0, fmt.Errorf("memory type of %#x: %w", p, err)
	}
	return MemoryType(t), nil
}

// PointerDeviceOrdinal returns the ordinal of the device the memory at p was allocated on or
// registered with.
func PointerDeviceOrdinal(p DevicePtr) (int, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	var ordinal int32 // an int
	if err := cuPointerGetAttribute(unsafe.Pointer(&ordinal), attrPointerDeviceOrdinal, p); err != nil {
		return 0, fmt.Errorf("device of %#x: %w", p, err)
	}
	return int(ordinal), nil
}

// PointerBufferID returns the driver's identifier of the allocation holding p: unique for the
// process's lifetime, so a buffer freed and allocated again at the same address gets a new one.
func PointerBufferID(p DevicePtr) (uint64, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	var id uint64 // an unsigned long long
	if err := cuPointerGetAttribute(unsafe.Pointer(&id), attrPointerBufferID, p); err != nil {
		return 0, fmt.Errorf("buffer id of %#x: %w", p, err)
	}
	return id, nil
}

// IpcGetMemHandle returns the handle another process passes to IpcOpenMemHandle to map the
// allocation at p, which MemAlloc returned.
func IpcGetMemHandle(p DevicePtr) (IpcMemHandle, error) {
	if err := initDriver(); err != nil {
		return IpcMemHandle{}, err
	}
	return cuIpcGetMemHandle(p)
}

// IpcOpenMemHandle maps another process's allocation into this one and enables peer access to
// its device as needed (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS). A process cannot open its own
// handles.
func IpcOpenMemHandle(h IpcMemHandle) (DevicePtr, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	return cuIpcOpenMemHandle(h, ipcLazyPeerAccess)
}

// IpcCloseMemHandle unmaps memory IpcOpenMemHandle mapped.
func IpcCloseMemHandle(p DevicePtr) error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuIpcCloseMemHandle(p)
}

// MemcpyAsync queues a copy of size bytes from src to dst on s. Either may be device memory or
// mapped host memory.
func MemcpyAsync(dst, src DevicePtr, size int, s Stream) error {
	if err := checkSize("cuMemcpyAsync", size); err != nil {
		return err
	}
	if err := initDriver(); err != nil {
		return err
	}
	return cuMemcpyAsync(dst, src, size, s)
}

// MemsetD8Async queues setting n bytes at dst to value on s.
func MemsetD8Async(dst DevicePtr, value byte, n int, s Stream) error {
	if err := checkSize("cuMemsetD8Async", n); err != nil {
		return err
	}
	if err := initDriver(); err != nil {
		return err
	}
	return cuMemsetD8Async(dst, value, n, s)
}

// StreamWriteValue64 queues on s, after the work already queued there, an 8-byte store of value
// at addr (device memory, or peer memory mapped here). The value is taken now, not when the store
// executes.
func StreamWriteValue64(s Stream, addr DevicePtr, value uint64) error {
	if addr == 0 {
		return fmt.Errorf("cuStreamWriteValue64: address 0: %w", errs.ErrInvalidArgument)
	}
	if err := initDriver(); err != nil {
		return err
	}
	return cuStreamWriteValue64(s, addr, value)
}
