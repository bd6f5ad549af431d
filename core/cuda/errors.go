package cuda

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

var (
	// ErrDriverNotFound: the CUDA driver library could not be loaded. Errors that match it carry
	// dlopen's message, which names the library.
	ErrDriverNotFound = errs.New(errs.ErrCUDA, "CUDA driver not found")
	// ErrNoDevice: the driver is there but sees no CUDA-capable device. A *Error whose Code is
	// CUDA_ERROR_NO_DEVICE matches it.
	ErrNoDevice = errs.New(errs.ErrCUDA, "no CUDA-capable device")
)

// Error is a CUresult other than CUDA_SUCCESS, returned by the driver function Op.
// Every Error matches errs.ErrCUDA with errors.Is.
type Error struct {
	Op      string // the driver function, e.g. "cuDeviceGetName"
	Code    int    // the CUresult
	Name    string // the CUresult's name from cuGetErrorName, e.g. "CUDA_ERROR_INVALID_VALUE"; "" if unknown
	Message string // its description from cuGetErrorString; "" if unknown
}

func (e *Error) Error() string {
	name := e.Name
	if name == "" {
		name = "CUresult"
	}
	if e.Message == "" {
		return fmt.Sprintf("%s: %s (%d)", e.Op, name, e.Code)
	}
	return fmt.Sprintf("%s: %s (%d): %s", e.Op, name, e.Code, e.Message)
}

// Unwrap returns errs.ErrCUDA, the class of every driver error.
func (e *Error) Unwrap() error { return errs.ErrCUDA }

// Is reports whether e is the driver's way of saying target: CUDA_ERROR_NO_DEVICE is ErrNoDevice.
func (e *Error) Is(target error) bool {
	return target == ErrNoDevice && e.Code == codeNoDevice
}

// queryResult turns the CUresult of a query (cuStreamQuery, cuEventQuery) into done or not:
// CUDA_ERROR_NOT_READY means the work is still running.
func queryResult(op string, r result) (bool, error) {
	switch r {
	case codeSuccess:
		return true, nil
	case codeNotReady:
		return false, nil
	}
	return false, check(op, r)
}
