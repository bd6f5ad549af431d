package cuda

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Context is a device's primary context (CUcontext), shared by everything in the process that
// uses that device. Get one with Device.RetainPrimaryContext.
type Context struct {
	h   unsafe.Pointer // the CUcontext
	dev Device
}

// Device returns the device the context belongs to.
func (c Context) Device() Device { return c.dev }

// RetainPrimaryContext retains the device's primary context, creating it on first use. Each
// successful call must be matched by a Release.
func (d Device) RetainPrimaryContext() (Context, error) {
	if err := initDriver(); err != nil {
		return Context{}, err
	}
	c, err := cuDevicePrimaryCtxRetain(d)
	if err != nil {
		return Context{}, fmt.Errorf("CUDA device %d: %w", d, err)
	}
	return c, nil
}

// Release drops the reference RetainPrimaryContext took.
func (c Context) Release() error {
	if err := initDriver(); err != nil {
		return err
	}
	if err := cuDevicePrimaryCtxRelease(c.dev); err != nil {
		return fmt.Errorf("CUDA device %d: %w", c.dev, err)
	}
	return nil
}

// SetCurrent makes c the current context of the calling OS thread. The current context is per
// thread: the caller must have called runtime.LockOSThread and must stay on the thread for as long
// as it relies on c being current.
func (c Context) SetCurrent() error {
	if err := initDriver(); err != nil {
		return err
	}
	if err := cuCtxSetCurrent(c); err != nil {
		return fmt.Errorf("CUDA device %d: %w", c.dev, err)
	}
	return nil
}

// CanAccessPeer reports whether d can access memory on peer directly (peer to peer).
func (d Device) CanAccessPeer(peer Device) (bool, error) {
	if err := initDriver(); err != nil {
		return false, err
	}
	ok, err := cuDeviceCanAccessPeer(d, peer)
	if err != nil {
		return false, fmt.Errorf("CUDA devices %d and %d: %w", d, peer, err)
	}
	return ok, nil
}

// NativeAtomicsWith reports whether the link between d and peer carries atomic operations
// natively (CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED): NVLink does, PCIe does not.
func (d Device) NativeAtomicsWith(peer Device) (bool, error) {
	if err := initDriver(); err != nil {
		return false, err
	}
	ok, err := cuDeviceNativeAtomics(d, peer)
	if err != nil {
		return false, fmt.Errorf("CUDA devices %d and %d: %w", d, peer, err)
	}
	return ok, nil
}

// Push makes c the current context of the calling OS thread, keeping the previous one on the
// thread's context stack; PopContext restores it. The caller must hold the thread
// (runtime.LockOSThread) from Push to PopContext. Unlike SetCurrent, Push and PopContext leave a
// C caller's thread with the context it had.
func (c Context) Push() error {
	if err := initDriver(); err != nil {
		return err
	}
	if err := cuCtxPushCurrent(c); err != nil {
		return fmt.Errorf("CUDA device %d: %w", c.dev, err)
	}
	return nil
}

// PopContext undoes the calling thread's last Push, making the context current before it
// current again.
func PopContext() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuCtxPopCurrent()
}

// Do runs f on the calling goroutine's OS thread, locked for the call, with c pushed as the
// thread's current context, then pops it: the thread ends with the context it had before (a C
// caller's cudaSetDevice choice included). Every driver call the library makes on a caller's
// thread goes through Do.
func (c Context) Do(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.Push(); err != nil {
		return err
	}
	err := f()
	return errors.Join(err, PopContext())
}

// CurrentContextHandle returns the calling OS thread's current CUcontext, nil when it has none:
// an opaque value for checking that a call left the thread's context as it found it.
func CurrentContextHandle() (unsafe.Pointer, error) {
	if err := initDriver(); err != nil {
		return nil, err
	}
	return cuCtxGetCurrent()
}

// ClearCurrent leaves the calling OS thread with no current context (cuCtxSetCurrent(NULL)).
func ClearCurrent() error {
	if err := initDriver(); err != nil {
		return err
	}
	return cuCtxSetCurrent(Context{})
}

// CurrentDevice returns the device of the calling OS thread's current context: the device a C
// caller chose with cudaSetDevice. It fails with a CUDA error when the thread has no context.
func CurrentDevice() (Device, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	return cuCtxGetDevice()
}

// EnablePeerAccess lets the calling thread's current context access memory of c's device
// directly (cuCtxEnablePeerAccess with c as the peer). Access that is already enabled is not an
// error. It fails when the devices cannot access each other (see CanAccessPeer).
func (c Context) EnablePeerAccess() error {
	if err := initDriver(); err != nil {
		return err
	}
	r := cuCtxEnablePeerAccess(c)
	if r == codePeerAccessAlreadyEnabled {
		return nil
	}
	if err := check("cuCtxEnablePeerAccess", r); err != nil {
		return fmt.Errorf("access to CUDA device %d: %w", c.dev, err)
	}
	return nil
}
