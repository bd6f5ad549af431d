// This file and shim.c are the package's only C. cgo is needed because the driver is a C library
// that must be loaded at run time: Go cannot call a C function pointer, so each entry point gets a
// C trampoline (generated from entrypoints.h) that calls the pointer dlsym resolved. The file holds
// the loader's C calls, the cuda.h constants and types the package names, and one thin typed
// wrapper per entry point, and nothing else: the package's API is built from these in plain Go.

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// result is the driver's return type, CUresult.
type result = C.CUresult

// CUresult codes and device attributes the plain-Go files name.
const (
	codeSuccess  = C.CUDA_SUCCESS
	codeNoDevice = C.CUDA_ERROR_NO_DEVICE
	codeNotReady = C.CUDA_ERROR_NOT_READY
	// codePeerAccessAlreadyEnabled: cuCtxEnablePeerAccess found access already enabled.
	codePeerAccessAlreadyEnabled = C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED
)

type deviceAttribute C.CUdevice_attribute

const (
	attrComputeCapabilityMajor deviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeCapabilityMinor deviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
	attrMultiprocessorCount    deviceAttribute = C.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
)

type pointerAttribute C.CUpointer_attribute

const (
	attrPointerMemoryType    pointerAttribute = C.CU_POINTER_ATTRIBUTE_MEMORY_TYPE
	attrPointerDeviceOrdinal pointerAttribute = C.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
	attrPointerBufferID      pointerAttribute = C.CU_POINTER_ATTRIBUTE_BUFFER_ID
)

// Flags the wrappers pass; the exported API documents the choice.
const (
	hostAllocPortable    = C.CU_MEMHOSTALLOC_PORTABLE
	hostAllocDeviceMap   = C.CU_MEMHOSTALLOC_DEVICEMAP
	ipcLazyPeerAccess    = C.CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS
	streamNonBlocking    = C.CU_STREAM_NON_BLOCKING
	eventDisableTiming   = C.CU_EVENT_DISABLE_TIMING
	streamWaitEventFlags = C.CU_EVENT_WAIT_DEFAULT
	// captureModeThreadLocal: see Stream.BeginCapture.
	captureModeThreadLocal = C.CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	// graphInstantiateFlags: no automatic frees, the launch stream's priority.
	graphInstantiateFlags = 0
)

// MemoryType is where a pointer's memory lives (CUmemorytype).
type MemoryType int

// The memory types cuPointerGetAttribute reports.
const (
	MemoryTypeHost    MemoryType = C.CU_MEMORYTYPE_HOST
	MemoryTypeDevice  MemoryType = C.CU_MEMORYTYPE_DEVICE
	MemoryTypeArray   MemoryType = C.CU_MEMORYTYPE_ARRAY
	MemoryTypeUnified MemoryType = C.CU_MEMORYTYPE_UNIFIED
)

// IpcMemHandleSize is the size of an IpcMemHandle (CU_IPC_HANDLE_SIZE).
const IpcMemHandleSize = C.CU_IPC_HANDLE_SIZE

const (
	// dlErrorLen bounds the dlopen or dlsym message the loader reports.
	dlErrorLen = 1024
	// deviceNameLen is the buffer for cuDeviceGetName; device names are far shorter.
	deviceNameLen = 256
	// pciBusIDLen is the buffer for cuDeviceGetPCIBusId, which needs 13 bytes for
	// "dddd:bb:dd.f" and its NUL; the extra room allows for wider domains.
	pciBusIDLen = 64
	// noFlags is the Flags argument the driver requires to be zero (cuInit).
	noFlags = 0
)

// entryPoint is one row of the table entrypoints.h generates.
type entryPoint struct {
	name       string // as the CUDA documentation spells it, e.g. "cuMemAlloc"
	symbol     string // as cuda.h maps it and dlsym looks it up, e.g. "cuMemAlloc_v2"
	required   bool
	minVersion int // lowest driver version that has it; 0 for any
}

// readEntryPoints copies the C table. It reads static data only; it loads nothing.
func readEntryPoints() []entryPoint {
	var n C.int
	first := C.mscclpp_cu_entries(&n)
	rows := unsafe.Slice(first, int(n))
	out := make([]entryPoint, len(rows))
	for i, r := range rows {
		out[i] = entryPoint{
			name:       C.GoString(r.name),
			symbol:     C.GoString(r.symbol),
			required:   r.required == C.CU_REQUIRED,
			minVersion: int(r.min_version),
		}
	}
	return out
}

// dlOpen opens the driver library at path (a file name or a path, as dlopen takes it).
// The caller must hold the OS thread: see loadLibrary.
func dlOpen(path string) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var msg [dlErrorLen]C.char
	if C.mscclpp_cu_open(cpath, &msg[0], C.size_t(len(msg))) != 0 {
		return errors.New(C.GoString(&msg[0]))
	}
	return nil
}

// dlResolve looks up entry i of readEntryPoints in the library dlOpen opened.
func dlResolve(i int) error {
	var msg [dlErrorLen]C.char
	if C.mscclpp_cu_resolve(C.int(i), &msg[0], C.size_t(len(msg))) != 0 {
		return errors.New(C.GoString(&msg[0]))
	}
	return nil
}

// check turns the CUresult of the driver function op into an error.
func check(op string, r result) error {
	if r == codeSuccess {
		return nil
	}
	e := &Error{Op: op, Code: int(r)}
	var s *C.char
	if C.mscclpp_cuGetErrorName(r, &s) == codeSuccess && s != nil {
		e.Name = C.GoString(s)
	}
	s = nil
	if C.mscclpp_cuGetErrorString(r, &s) == codeSuccess && s != nil {
		e.Message = C.GoString(s)
	}
	return e
}

// The typed wrappers: one per entry point, named after it, each a direct call and nothing more.
// They assume the library is loaded (and, past cuDriverGetVersion, initialized); the exported API
// makes sure of that first.

func cuDriverGetVersion() (int, error) {
	var v C.int
	err := check("cuDriverGetVersion", C.mscclpp_cuDriverGetVersion(&v))
	return int(v), err
}

func cuInit() error {
	return check("cuInit", C.mscclpp_cuInit(noFlags))
}

func cuDeviceGetCount() (int, error) {
	var n C.int
	err := check("cuDeviceGetCount", C.mscclpp_cuDeviceGetCount(&n))
	return int(n), err
}

func cuDeviceGet(ordinal int) (Device, error) {
	var d C.CUdevice
	err := check("cuDeviceGet", C.mscclpp_cuDeviceGet(&d, C.int(ordinal)))
	return Device(d), err
}

func cuDeviceGetName(d Device) (string, error) {
	var buf [deviceNameLen]C.char
	if err := check("cuDeviceGetName", C.mscclpp_cuDeviceGetName(&buf[0], C.int(len(buf)), C.CUdevice(d))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func cuDeviceGetPCIBusId(d Device) (string, error) {
	var buf [pciBusIDLen]C.char
	if err := check("cuDeviceGetPCIBusId", C.mscclpp_cuDeviceGetPCIBusId(&buf[0], C.int(len(buf)), C.CUdevice(d))); err != nil {
		return "", err
	}
	return C.GoString(&buf[0]), nil
}

func cuDeviceGetAttribute(attr deviceAttribute, d Device) (int, error) {
	var v C.int
	err := check("cuDeviceGetAttribute", C.mscclpp_cuDeviceGetAttribute(&v, C.CUdevice_attribute(attr), C.CUdevice(d)))
	return int(v), err
}

func cuDeviceCanAccessPeer(d, peer Device) (bool, error) {
	var v C.int
	err := check("cuDeviceCanAccessPeer", C.mscclpp_cuDeviceCanAccessPeer(&v, C.CUdevice(d), C.CUdevice(peer)))
	return v != 0, err
}

func cuDeviceNativeAtomics(d, peer Device) (bool, error) {
	var v C.int
	err := check("cuDeviceGetP2PAttribute", C.mscclpp_cuDeviceGetP2PAttribute(&v, C.CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED,
		C.CUdevice(d), C.CUdevice(peer)))
	return v != 0, err
}

func cuDevicePrimaryCtxRetain(d Device) (Context, error) {
	var c C.CUcontext
	err := check("cuDevicePrimaryCtxRetain", C.mscclpp_cuDevicePrimaryCtxRetain(&c, C.CUdevice(d)))
	return Context{h: unsafe.Pointer(c), dev: d}, err
}

func cuDevicePrimaryCtxRelease(d Device) error {
	return check("cuDevicePrimaryCtxRelease", C.mscclpp_cuDevicePrimaryCtxRelease(C.CUdevice(d)))
}

func cuCtxSetCurrent(c Context) error {
	return check("cuCtxSetCurrent", C.mscclpp_cuCtxSetCurrent(C.CUcontext(c.h)))
}

func cuCtxGetCurrent() (unsafe.Pointer, error) {
	var c C.CUcontext
	err := check("cuCtxGetCurrent", C.mscclpp_cuCtxGetCurrent(&c))
	return unsafe.Pointer(c), err
}

func cuCtxPushCurrent(c Context) error {
	return check("cuCtxPushCurrent", C.mscclpp_cuCtxPushCurrent(C.CUcontext(c.h)))
}

func cuCtxGetDevice() (Device, error) {
	var d C.CUdevice
	err := check("cuCtxGetDevice", C.mscclpp_cuCtxGetDevice(&d))
	return Device(d), err
}

func cuCtxPopCurrent() error {
	var c C.CUcontext
	return check("cuCtxPopCurrent", C.mscclpp_cuCtxPopCurrent(&c))
}

// cuCtxEnablePeerAccess returns the raw CUresult: CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is
// success to the caller.
func cuCtxEnablePeerAccess(peer Context) result {
	return C.mscclpp_cuCtxEnablePeerAccess(C.CUcontext(peer.h), noFlags)
}

func cuMemAlloc(size int) (DevicePtr, error) {
	var p C.CUdeviceptr
	err := check("cuMemAlloc", C.mscclpp_cuMemAlloc(&p, C.size_t(size)))
	return DevicePtr(p), err
}

func cuMemFree(p DevicePtr) error {
	return check("cuMemFree", C.mscclpp_cuMemFree(C.CUdeviceptr(p)))
}

func cuMemHostAlloc(size int, flags uint) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := check("cuMemHostAlloc", C.mscclpp_cuMemHostAlloc(&p, C.size_t(size), C.uint(flags)))
	return p, err
}

func cuMemFreeHost(p unsafe.Pointer) error {
	return check("cuMemFreeHost", C.mscclpp_cuMemFreeHost(p))
}

func cuMemHostGetDevicePointer(p unsafe.Pointer) (DevicePtr, error) {
	var d C.CUdeviceptr
	err := check("cuMemHostGetDevicePointer", C.mscclpp_cuMemHostGetDevicePointer(&d, p, noFlags))
	return DevicePtr(d), err
}

func cuMemGetAddressRange(p DevicePtr) (DevicePtr, int, error) {
	var base C.CUdeviceptr
	var size C.size_t
	err := check("cuMemGetAddressRange", C.mscclpp_cuMemGetAddressRange(&base, &size, C.CUdeviceptr(p)))
	return DevicePtr(base), int(size), err
}

// cuPointerGetAttribute stores attribute attr of p in *data, which must be the type the
// attribute has in cuda.h and hold no Go pointers.
func cuPointerGetAttribute(data unsafe.Pointer, attr pointerAttribute, p DevicePtr) error {
	return check("cuPointerGetAttribute", C.mscclpp_cuPointerGetAttribute(data, C.CUpointer_attribute(attr), C.CUdeviceptr(p)))
}

func cuIpcGetMemHandle(p DevicePtr) (IpcMemHandle, error) {
	var h C.CUipcMemHandle
	var out IpcMemHandle
	if err := check("cuIpcGetMemHandle", C.mscclpp_cuIpcGetMemHandle(&h, C.CUdeviceptr(p))); err != nil {
		return out, err
	}
	for i, b := range h.reserved {
		out[i] = byte(b)
	}
	return out, nil
}

func cuIpcOpenMemHandle(handle IpcMemHandle, flags uint) (DevicePtr, error) {
	var h C.CUipcMemHandle
	for i, b := range handle {
		h.reserved[i] = C.char(b)
	}
	var p C.CUdeviceptr
	err := check("cuIpcOpenMemHandle", C.mscclpp_cuIpcOpenMemHandle(&p, h, C.uint(flags)))
	return DevicePtr(p), err
}

func cuIpcCloseMemHandle(p DevicePtr) error {
	return check("cuIpcCloseMemHandle", C.mscclpp_cuIpcCloseMemHandle(C.CUdeviceptr(p)))
}

func cuStreamCreate(flags uint) (Stream, error) {
	var s C.CUstream
	err := check("cuStreamCreate", C.mscclpp_cuStreamCreate(&s, C.uint(flags)))
	return Stream{h: unsafe.Pointer(s)}, err
}

func cuStreamDestroy(s Stream) error {
	return check("cuStreamDestroy", C.mscclpp_cuStreamDestroy(C.CUstream(s.h)))
}

func cuStreamSynchronize(s Stream) error {
	return check("cuStreamSynchronize", C.mscclpp_cuStreamSynchronize(C.CUstream(s.h)))
}

// cuStreamQuery returns the raw CUresult: CUDA_ERROR_NOT_READY is an answer, not a failure.
func cuStreamQuery(s Stream) result {
	return C.mscclpp_cuStreamQuery(C.CUstream(s.h))
}

func cuStreamWaitEvent(s Stream, e Event) error {
	return check("cuStreamWaitEvent", C.mscclpp_cuStreamWaitEvent(C.CUstream(s.h), C.CUevent(e.h), streamWaitEventFlags))
}

func cuEventCreate(flags uint) (Event, error) {
	var e C.CUevent
	err := check("cuEventCreate", C.mscclpp_cuEventCreate(&e, C.uint(flags)))
	return Event{h: unsafe.Pointer(e)}, err
}

func cuEventDestroy(e Event) error {
	return check("cuEventDestroy", C.mscclpp_cuEventDestroy(C.CUevent(e.h)))
}

func cuEventRecord(e Event, s Stream) error {
	return check("cuEventRecord", C.mscclpp_cuEventRecord(C.CUevent(e.h), C.CUstream(s.h)))
}

func cuEventSynchronize(e Event) error {
	return check("cuEventSynchronize", C.mscclpp_cuEventSynchronize(C.CUevent(e.h)))
}

// cuEventQuery returns the raw CUresult: CUDA_ERROR_NOT_READY is an answer, not a failure.
func cuEventQuery(e Event) result {
	return C.mscclpp_cuEventQuery(C.CUevent(e.h))
}

func cuEventElapsedTime(start, end Event) (float32, error) {
	var ms C.float
	err := check("cuEventElapsedTime", C.mscclpp_cuEventElapsedTime(&ms, C.CUevent(start.h), C.CUevent(end.h)))
	return float32(ms), err
}

func cuMemcpyAsync(dst, src DevicePtr, size int, s Stream) error {
	return check("cuMemcpyAsync", C.mscclpp_cuMemcpyAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(size), C.CUstream(s.h)))
}

func cuMemsetD8Async(dst DevicePtr, value byte, n int, s Stream) error {
	return check("cuMemsetD8Async", C.mscclpp_cuMemsetD8Async(C.CUdeviceptr(dst), C.uchar(value), C.size_t(n), C.CUstream(s.h)))
}

func cuStreamWriteValue64(s Stream, addr DevicePtr, value uint64) error {
	return check("cuStreamWriteValue64", C.mscclpp_cuStreamWriteValue64_v2(C.CUstream(s.h), C.CUdeviceptr(addr),
		C.cuuint64_t(value), C.CU_STREAM_WRITE_VALUE_DEFAULT))
}

func cuStreamBeginCapture(s Stream) error {
	return check("cuStreamBeginCapture", C.mscclpp_cuStreamBeginCapture(C.CUstream(s.h), captureModeThreadLocal))
}

func cuStreamEndCapture(s Stream) (Graph, error) {
	var g C.CUgraph
	err := check("cuStreamEndCapture", C.mscclpp_cuStreamEndCapture(C.CUstream(s.h), &g))
	return Graph{h: unsafe.Pointer(g)}, err
}

func cuGraphInstantiateWithFlags(g Graph) (GraphExec, error) {
	var e C.CUgraphExec
	err := check("cuGraphInstantiateWithFlags", C.mscclpp_cuGraphInstantiateWithFlags(&e, C.CUgraph(g.h), graphInstantiateFlags))
	return GraphExec{h: unsafe.Pointer(e)}, err
}

func cuGraphLaunch(e GraphExec, s Stream) error {
	return check("cuGraphLaunch", C.mscclpp_cuGraphLaunch(C.CUgraphExec(e.h), C.CUstream(s.h)))
}

func cuGraphExecDestroy(e GraphExec) error {
	return check("cuGraphExecDestroy", C.mscclpp_cuGraphExecDestroy(C.CUgraphExec(e.h)))
}

func cuGraphDestroy(g Graph) error {
	return check("cuGraphDestroy", C.mscclpp_cuGraphDestroy(C.CUgraph(g.h)))
}

// cuModuleLoadData loads image (a cubin, fatbin or PTX text) from a NUL-terminated C copy, so
// that the driver never sees Go memory and PTX needs no terminator from the caller.
func cuModuleLoadData(image []byte) (Module, error) {
	cimage := C.malloc(C.size_t(len(image) + 1))
	if cimage == nil {
		return Module{}, fmt.Errorf("cuModuleLoadData: allocating %d bytes: %w", len(image)+1, errs.ErrSystem)
	}
	defer C.free(cimage)
	dst := unsafe.Slice((*byte)(cimage), len(image)+1)
	dst[copy(dst, image)] = 0
	var m C.CUmodule
	err := check("cuModuleLoadData", C.mscclpp_cuModuleLoadData(&m, cimage))
	return Module{h: unsafe.Pointer(m)}, err
}

func cuModuleUnload(m Module) error {
	return check("cuModuleUnload", C.mscclpp_cuModuleUnload(C.CUmodule(m.h)))
}

func cuModuleGetFunction(m Module, name string) (Function, error) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var f C.CUfunction
	err := check("cuModuleGetFunction", C.mscclpp_cuModuleGetFunction(&f, C.CUmodule(m.h), cname))
	return Function{h: unsafe.Pointer(f)}, err
}

// kernelArgAlign is the alignment each argument's copy gets; no kernel parameter needs more.
const kernelArgAlign = 16

// cuLaunchKernel launches f with args, each the bytes of one kernel parameter. cgo forbids
// handing C a Go array of pointers, so the pointer array and the argument values are copied into
// one C allocation; the driver copies the parameters before cuLaunchKernel returns.
func cuLaunchKernel(f Function, grid, block Dim3, sharedMemBytes int, s Stream, args [][]byte) error {
	ptrSize := int(unsafe.Sizeof(unsafe.Pointer(nil)))
	total := len(args) * ptrSize
	for _, a := range args {
		total = alignUp(total, kernelArgAlign) + len(a)
	}
	var params *unsafe.Pointer // NULL for a kernel without parameters
	if len(args) > 0 {
		buf := C.malloc(C.size_t(total))
		if buf == nil {
			return fmt.Errorf("cuLaunchKernel: allocating %d bytes of parameters: %w", total, errs.ErrSystem)
		}
		defer C.free(buf)
		mem := unsafe.Slice((*byte)(buf), total)
		ptrs := unsafe.Slice((*unsafe.Pointer)(buf), len(args))
		off := len(args) * ptrSize
		for i, a := range args {
			off = alignUp(off, kernelArgAlign)
			copy(mem[off:], a)
			ptrs[i] = unsafe.Pointer(&mem[off])
			off += len(a)
		}
		params = &ptrs[0]
	}
	return check("cuLaunchKernel", C.mscclpp_cuLaunchKernel(C.CUfunction(f.h),
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedMemBytes), C.CUstream(s.h), params, nil))
}

// launchStepOps names the steps of mscclpp_launch_in_context (enum mscclpp_launch_step).
var launchStepOps = [...]string{"cuCtxGetCurrent", "cuCtxPushCurrent", "cuLaunchKernel", "cuCtxPopCurrent"}

func launchInContext(ctx Context, f Function, grid, block uint32, s Stream, param []byte) error {
	var step C.int
	r := C.mscclpp_launch_in_context(C.CUcontext(ctx.h), C.CUfunction(f.h), C.uint(grid), C.uint(block),
		C.CUstream(s.h), unsafe.Pointer(&param[0]), &step)
	if r == codeSuccess {
		return nil
	}
	op := "cuLaunchKernel"
	if int(step) >= 0 && int(step) < len(launchStepOps) {
		op = launchStepOps[step]
	}
	return check(op, r)
}

func alignUp(n, align int) int { return (n + align - 1) / align * align }
