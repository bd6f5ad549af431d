// This file and shim.c are the package's only C. cgo is needed because the driver is a C library
// that must be loaded at run time: Go cannot call a C function pointer, so each entry point gets a
// C trampoline (generated from entrypoints.h) that calls the pointer dlsym resolved. The file holds
// the loader's C calls and one thin typed wrapper per entry point, and nothing else: the package's
// API is built from these wrappers in plain Go.

package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// CUresult codes and device attributes the plain-Go files name.
const (
	codeSuccess      = C.CUDA_SUCCESS
	codeNoDevice     = C.CUDA_ERROR_NO_DEVICE
	codeNotSupported = C.CUDA_ERROR_NOT_SUPPORTED
)

type deviceAttribute C.CUdevice_attribute

const (
	attrComputeCapabilityMajor deviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeCapabilityMinor deviceAttribute = C.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
)

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
func check(op string, r C.CUresult) error {
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
