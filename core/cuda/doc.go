// Package cuda is the library's layer over the CUDA driver API (libcuda): the one place that
// talks to the driver, with Go types and Go errors.
//
// # Loading
//
// Nothing links against libcuda at build time, and importing the package does nothing. The first
// call that needs the driver dlopens the library MSCCLPP_CUDA_LIBRARY names (libcuda.so.1 by
// default), resolves every entry point with dlsym, and caches the outcome for the life of the
// process; calls that need a device then run cuInit(0), once, and cache that too. The library is
// never closed. A library built here therefore runs against whatever driver the host where it is
// later copied provides, as long as that driver is at least as new as the symbols it needs.
//
// dlopen, dlsym and the dlerror that explains their failures run with the OS thread locked
// (dlerror's state is per thread), each pair inside a single C call.
//
// Without a usable driver nothing crashes or exits: calls return an error matching
// ErrDriverNotFound (dlopen failed; the message carries dlopen's, which names the file) or
// ErrNoDevice (cuInit found no device). Every failed driver call returns a *Error naming the
// function and its CUresult. All of them match errs.ErrCUDA.
//
// # Entry points and symbol versions
//
// entrypoints.h lists, one line each, the driver functions the package uses, as the CUDA
// documentation names them. The symbol resolved is the one cuda.h maps that name to, for example
// cuMemAlloc_v2 for cuMemAlloc and cuIpcOpenMemHandle_v2 for cuIpcOpenMemHandle: exactly what a
// program compiled against the same cuda.h would bind. Resolving those names with dlsym rather
// than asking cuGetProcAddress keeps the loader to plain dlsym, which works the same on every
// driver, and keeps the version choice in one place, cuda.h; cuGetProcAddress itself changed its
// signature in CUDA 12. The legacy default stream is used: CUDA_API_PER_THREAD_DEFAULT_STREAM is
// not defined, so no _ptds or _ptsz variant is resolved.
//
// Each entry is required (loading fails without it) or optional (the loader logs its absence and
// calls to it return CUDA_ERROR_NOT_SUPPORTED), and may name the lowest driver version that has
// it; older drivers are not searched for it.
//
// # Adding an entry point
//
// 1. Add one line to entrypoints.h, copying the parameter list from cuda.h:
//
//	CU_FN(cuDeviceTotalMem, CU_REQUIRED, 0, (size_t *bytes, CUdevice dev), (bytes, dev))
//
// That line generates the function-pointer storage, its row in the table the loader resolves,
// and the C trampoline mscclpp_cuDeviceTotalMem. The build fails if the parameter list differs
// from cuda.h's prototype.
//
// 2. Add the typed wrapper to driver_cgo.go, named after the function, that calls the trampoline
// and passes the CUresult to check:
//
//	func cuDeviceTotalMem(d Device) (int64, error) {
//		var n C.size_t
//		err := check("cuDeviceTotalMem", C.mscclpp_cuDeviceTotalMem(&n, C.CUdevice(d)))
//		return int64(n), err
//	}
//
// 3. Export what callers need from a plain Go file, calling initDriver first.
//
// cgo is confined to driver_cgo.go and shim.c; the rest of the package is plain Go. Never add
// cuMulticast* functions: they are forbidden on the GPU hosts the library targets.
//
// # Building
//
// The package needs cgo and cuda.h (for types and prototypes only). Debian's nvidia-cuda-toolkit
// installs it in /usr/include; elsewhere point CGO_CFLAGS at it, e.g.
// CGO_CFLAGS=-I/usr/local/cuda/include. The only library linked is libdl.
//
// # Threads
//
// The driver keeps the current context per OS thread. Device queries (DeviceCount, Name,
// PCIBusID, ComputeCapability, CanAccessPeer) need no context; memory, stream, event and module
// calls act in the calling thread's current context. Code that makes a context current with
// Context.SetCurrent and then relies on it must call runtime.LockOSThread first and keep the
// goroutine on that thread until it is done, or the Go scheduler may move it to a thread where
// another context, or none, is current.
//
// Stream capture into a CUDA graph (Stream.BeginCapture, Stream.EndCapture, Graph.Instantiate,
// GraphExec.Launch) uses the thread-local capture mode: the capture must end on the OS thread
// that began it, so the capturing goroutine holds its thread (runtime.LockOSThread) throughout,
// and other threads may keep calling the driver meanwhile.
//
// # Why not gorgonia.org/cu
//
// gorgonia.org/cu calls cuInit from its package init and calls os.Exit(1) when that fails, so any
// program importing it dies on a machine without a GPU, including the build and test machines.
// It also lacks cuIpcGetMemHandle, cuIpcOpenMemHandle and cuMemHostAlloc, which the library
// needs to share buffers between processes and to map host memory into the device.
package cuda
