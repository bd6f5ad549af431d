package cuda

import (
	"fmt"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Module is code loaded into the current context (CUmodule).
type Module struct{ h unsafe.Pointer }

// Function is a kernel in a Module (CUfunction).
type Function struct{ h unsafe.Pointer }

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// LoadModule loads a cubin, fatbin or PTX image into the current context.
func LoadModule(image []byte) (Module, error) {
	if len(image) == 0 {
		return Module{}, fmt.Errorf("cuModuleLoadData: empty image: %w", errs.ErrInvalidArgument)
	}
	if err := initDriver(); err != nil {
		return Module{}, err
	}
	return cuModuleLoadData(image)
}

// Unload unloads m.
func (m Module) Unload() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuModuleUnload(m)
}

// Function returns the kernel named name (its mangled name for C++ kernels).
func (m Module) Function(name string) (Function, error) {
	if err := initDriver(); err != nil {
		return Function{}, err
	}
	f, err := cuModuleGetFunction(m, name)
	if err != nil {
		return Function{}, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// LaunchKernel queues f on s over grid blocks of block threads, with sharedMemBytes of dynamic
// shared memory. Each element of args is the bytes of one kernel parameter, in order and in the
// host's byte order (binary.NativeEndian), e.g. 8 bytes for a pointer.
func LaunchKernel(f Function, grid, block Dim3, sharedMemBytes int, s Stream, args ...[]byte) error {
	if sharedMemBytes < 0 {
		return fmt.Errorf("cuLaunchKernel: shared memory %d bytes: %w", sharedMemBytes, errs.ErrInvalidArgument)
	}
	for i, a := range args {
		if len(a) == 0 {
			return fmt.Errorf("cuLaunchKernel: argument %d is empty: %w", i, errs.ErrInvalidArgument)
		}
	}
	if err := initDriver(); err != nil {
		return err
	}
	return cuLaunchKernel(f, grid, block, sharedMemBytes, s, args)
}

// LaunchKernelInContext queues f on s over grid blocks of block threads (one-dimensional, no
// dynamic shared memory) with one kernel parameter, the bytes of param, and with ctx current on
// the calling OS thread for the launch: pushed before and popped after when another context (or
// none) is current, left alone when ctx already is. The whole launch is one call into C, for
// launch paths where each crossing counts; the thread need not be locked.
func LaunchKernelInContext(ctx Context, f Function, grid, block uint32, s Stream, param []byte) error {
	if len(param) == 0 {
		return fmt.Errorf("cuLaunchKernel: the parameter is empty: %w", errs.ErrInvalidArgument)
	}
	if err := initDriver(); err != nil {
		return err
	}
	if err := launchInContext(ctx, f, grid, block, s, param); err != nil {
		return fmt.Errorf("CUDA device %d: %w", ctx.dev, err)
	}
	return nil
}
