package core

import (
	"context"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// requireGPU skips the test on machines without a GPU.
func requireGPU(t *testing.T) {
	t.Helper()
	if n, err := cuda.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no GPU: %v", err)
	}
}

// keepsCurrent runs each step on the test's locked OS thread, which starts with no current CUDA
// context, and fails the test if a step leaves any context current: the library pushes its
// contexts and pops them, so a C caller's thread keeps the context it chose.
func keepsCurrent(t *testing.T, steps []struct {
	name string
	run  func() error
}) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	require.NoError(t, cuda.ClearCurrent())
	for _, s := range steps {
		require.NoError(t, s.run(), s.name)
		cur, err := cuda.CurrentContextHandle()
		require.NoError(t, err)
		assert.Equal(t, unsafe.Pointer(nil), cur, "%s left a context current on the caller's thread", s.name)
	}
}

type step = struct {
	name string
	run  func() error
}

// TestContextKeepsCallersContext calls every exported method of the channel API's host objects
// that touches the driver and checks that none leaves a context current. Needs a GPU.
func TestContextKeepsCallersContext(t *testing.T) {
	requireGPU(t)
	c := NewContext()
	var (
		ep        Endpoint
		conn      *Connection
		buf       cuda.DevicePtr
		mem, peer RegisteredMemory
		stub      SemaphoreStub
		pctx      cuda.Context
	)
	const size = 1 << 16
	keepsCurrent(t, []step{
		{"cuda.Context.Do", func() error {
			dev, err := cuda.GetDevice(0)
			if err != nil {
				return err
			}
			if pctx, err = dev.RetainPrimaryContext(); err != nil {
				return err
			}
			return pctx.Do(func() error {
				var err error
				buf, err = cuda.MemAlloc(size)
				return err
			})
		}},
		{"CreateEndpoint", func() (err error) {
			ep, err = c.CreateEndpoint(EndpointConfig{Transport: TransportP2P, Device: Device{Type: DeviceGPU, ID: 0}})
			return err
		}},
		{"Connect", func() (err error) { conn, err = c.Connect(ep, ep); return err }},
		{"RegisterMemory", func() (err error) { mem, err = c.RegisterMemory(buf, size, TransportP2P); return err }},
		{"Alloc", func() error { _, err := c.Alloc(0, 64); return err }},
		{"UnmarshalRegisteredMemory", func() error {
			b, err := mem.MarshalBinary()
			if err != nil {
				return err
			}
			peer, err = UnmarshalRegisteredMemory(c, b)
			return err
		}},
		{"Connection.Write", func() error { return conn.Write(peer, 0, mem, size/2, size/2) }},
		{"Connection.UpdateAndSync", func() error { return conn.UpdateAndSync(peer, 0, 7) }},
		{"Connection.Flush", func() error { return conn.Flush(context.Background()) }},
		{"NewSemaphoreStub", func() (err error) { stub, err = NewSemaphoreStub(conn); return err }},
		{"NewSemaphore", func() error { _, err := NewSemaphore(stub, stub); return err }},
		{"UnmapMemory", func() error { return c.UnmapMemory(peer) }},
		{"Close", c.Close},
		{"free", func() error {
			return pctx.Do(func() error { return cuda.MemFree(buf) })
		}},
		{"release", func() error { return pctx.Release() }},
	})
}

// TestRegisterAfterFreeGetsFreshHandle: memory freed and allocated again at the same address is
// registered with the new allocation's IPC handle, never the one cached for the old allocation
// (a peer opening the old handle would reach freed memory, or fail). Needs a GPU.
func TestRegisterAfterFreeGetsFreshHandle(t *testing.T) {
	requireGPU(t)
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	pctx, err := dev.RetainPrimaryContext()
	require.NoError(t, err)
	defer pctx.Release()
	c := NewContext()
	defer func() { assert.NoError(t, c.Close()) }()

	const size = 4 << 20
	alloc := func() (p cuda.DevicePtr) {
		require.NoError(t, pctx.Do(func() (err error) { p, err = cuda.MemAlloc(size); return err }))
		return p
	}
	first := alloc()
	old, err := c.RegisterMemory(first, size, TransportP2P)
	require.NoError(t, err)
	require.NoError(t, pctx.Do(func() error { return cuda.MemFree(first) }))

	// The driver usually hands the same range out again; try a few times.
	var again cuda.DevicePtr
	var spare []cuda.DevicePtr
	for range 8 {
		if p := alloc(); p == first {
			again = p
			break
		} else {
			spare = append(spare, p)
		}
	}
	defer func() {
		for _, p := range append(spare, again) {
			if p != 0 {
				_ = pctx.Do(func() error { return cuda.MemFree(p) })
			}
		}
	}()
	if again == 0 {
		t.Skip("the driver did not reuse the freed address; nothing to check")
	}
	fresh, err := c.RegisterMemory(again, size, TransportP2P)
	require.NoError(t, err)
	var want cuda.IpcMemHandle
	require.NoError(t, pctx.Do(func() (err error) { want, err = cuda.IpcGetMemHandle(again); return err }))
	assert.Equal(t, want, fresh.handle, "the registry must hand out the new allocation's handle")
	assert.NotEqual(t, old.handle, fresh.handle, "the old allocation's handle was handed out again")
}
