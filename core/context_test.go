package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestCreateEndpoint(t *testing.T) {
	ctx := NewContext()
	defer ctx.Close()

	ep, err := ctx.CreateEndpoint(EndpointConfig{Transport: TransportP2P, Device: Device{Type: DeviceCPU}})
	require.NoError(t, err, "a CPU endpoint needs no driver")
	assert.Equal(t, thisProcess().host, ep.HostHash())
	assert.Equal(t, int(thisProcess().pid), ep.PID())
	other, err := ctx.CreateEndpoint(ep.Config())
	require.NoError(t, err)
	assert.NotEqual(t, ep.ID(), other.ID(), "ids are random")

	refusals := []struct {
		name  string
		cfg   EndpointConfig
		class error
		words string
	}{
		{"unknown transport", EndpointConfig{Transport: 7, Device: gpu0}, errs.ErrInvalidArgument, "unknown transport 7"},
		{"negative GPU", EndpointConfig{Device: Device{Type: DeviceGPU, ID: -1}}, errs.ErrInvalidArgument, "GPU id -1"},
		{"unknown device type", EndpointConfig{Device: Device{Type: 9}}, errs.ErrInvalidArgument, "device type 9"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ctx.CreateEndpoint(tc.cfg)
			assert.ErrorIs(t, err, tc.class)
			assert.ErrorContains(t, err, tc.words)
		})
	}
}

func TestCreateGPUEndpointWithoutGPU(t *testing.T) {
	requireNoGPU(t)
	ctx := NewContext()
	defer ctx.Close()
	_, err := ctx.CreateEndpoint(EndpointConfig{Transport: TransportP2P, Device: gpu0})
	assertNoGPUError(t, err)
	// Over libfabric too a GPU endpoint needs its GPU (its memory is staged through host buffers).
	for _, tr := range []Transport{TransportIB, TransportSHM} {
		if CheckTransport(tr, "test") != nil {
			continue // no libfabric provider for it here
		}
		_, err := ctx.CreateEndpoint(EndpointConfig{Transport: tr, Device: gpu0})
		assertNoGPUError(t, err)
	}
}

func TestCheckConnect(t *testing.T) {
	here := thisProcess()
	local := testEndpoint(here, TransportP2P, gpu0, 1)
	tests := []struct {
		name          string
		local, remote Endpoint
		class         error
		words         string
	}{
		{"same process", local, testEndpoint(here, TransportP2P, Device{Type: DeviceGPU, ID: 1}, 2), nil, ""},
		{"same endpoint", local, local, nil, ""},
		{"another process", local, testEndpoint(otherProcess(), TransportP2P, gpu0, 2), nil, ""},
		{"local from another process", testEndpoint(otherProcess(), TransportP2P, gpu0, 1), local, errs.ErrInvalidArgument, "created by another process"},
		{"transport mismatch", local, testEndpoint(here, TransportIB, gpu0, 2), errs.ErrInvalidArgument, "transports differ (P2P and IB)"},
		{"IB for GPU memory", testEndpoint(here, TransportIB, gpu0, 1), withAddress(testEndpoint(otherHost(), TransportIB, gpu0, 2)), nil, ""},
		{"SHM for GPU memory", testEndpoint(here, TransportSHM, gpu0, 1), withAddress(testEndpoint(here, TransportSHM, gpu0, 2)), nil, ""},
		{"IB from GPU to CPU", testEndpoint(here, TransportIB, gpu0, 1), withAddress(testEndpoint(otherHost(), TransportIB, Device{}, 2)), errs.ErrInvalidArgument, "two CPU endpoints (host memory) or two GPU endpoints"},
		{"IB without an address", testEndpoint(here, TransportIB, Device{}, 1), testEndpoint(otherHost(), TransportIB, Device{}, 2), errs.ErrInvalidArgument, "has no address"},
		{"SHM across hosts", testEndpoint(here, TransportSHM, Device{}, 1), withAddress(testEndpoint(otherHost(), TransportSHM, Device{}, 2)), ErrDifferentHost, "shared memory needs both ends on one host"},
		{"IB across hosts", testEndpoint(here, TransportIB, Device{}, 1), withAddress(testEndpoint(otherHost(), TransportIB, Device{}, 2)), nil, ""},
		{"CPU local", testEndpoint(here, TransportP2P, Device{}, 1), local, errs.ErrInvalidArgument, "GPU endpoints only"},
		{"CPU remote", local, testEndpoint(here, TransportP2P, Device{}, 2), errs.ErrInvalidArgument, "GPU endpoints only"},
		{"another host", local, testEndpoint(otherHost(), TransportP2P, gpu0, 2), ErrDifferentHost, "remote endpoint is on host"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkConnect(tc.local, tc.remote, here)
			if tc.class == nil {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, tc.class)
			assert.ErrorContains(t, err, tc.words)
		})
	}
	assert.ErrorIs(t, checkConnect(local, testEndpoint(otherHost(), TransportP2P, gpu0, 2), here), errs.ErrInvalidUsage,
		"another host is a usage error")
}

func TestConnectRefusals(t *testing.T) {
	ctx := NewContext()
	defer ctx.Close()
	here := thisProcess()
	_, err := ctx.Connect(testEndpoint(here, TransportP2P, gpu0, 1), testEndpoint(here, TransportIB, gpu0, 2))
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = ctx.Connect(testEndpoint(here, TransportIB, gpu0, 1), testEndpoint(here, TransportIB, Device{}, 2))
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = ctx.Connect(testEndpoint(here, TransportP2P, gpu0, 1), testEndpoint(otherHost(), TransportP2P, gpu0, 2))
	assert.ErrorIs(t, err, ErrDifferentHost)
}

func TestConnectWithoutGPU(t *testing.T) {
	requireNoGPU(t)
	ctx := NewContext()
	defer ctx.Close()
	ep := testEndpoint(thisProcess(), TransportP2P, gpu0, 1)
	_, err := ctx.Connect(ep, ep)
	assertNoGPUError(t, err)
}

func TestRegisterMemoryRefusals(t *testing.T) {
	ctx := NewContext()
	defer ctx.Close()
	_, err := ctx.RegisterMemory(0, 8, TransportP2P)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = ctx.RegisterMemory(0x1000, 0, TransportP2P)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	_, err = ctx.RegisterMemory(0x1000, 8, 7)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
}

func TestRegisterMemoryWithoutGPU(t *testing.T) {
	requireNoGPU(t)
	ctx := NewContext()
	defer ctx.Close()
	_, err := ctx.RegisterMemory(0x1000, 8, TransportP2P)
	assertNoGPUError(t, err)
}

func TestCheckWithin(t *testing.T) {
	tests := []struct {
		name        string
		ptr, size   uint64
		base, size2 uint64
		ok          bool
	}{
		{"whole", 0x1000, 0x100, 0x1000, 0x100, true},
		{"inside", 0x1010, 0x10, 0x1000, 0x100, true},
		{"before", 0xff0, 0x10, 0x1000, 0x100, false},
		{"past the end", 0x1010, 0x100, 0x1000, 0x100, false},
		{"huge", 0x1010, ^uint64(0), 0x1000, 0x100, false},
	}
	for _, tc := range tests {
		err := checkWithin(cuda.DevicePtr(tc.ptr), tc.size, cuda.DevicePtr(tc.base), tc.size2)
		if tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, errs.ErrInvalidArgument, tc.name)
		}
	}
}

// TestUnmapMemory: memory of this process is never mapped (nothing to do), and memory this
// context did not map is refused.
func TestUnmapMemory(t *testing.T) {
	ctx := NewContext()
	defer ctx.Close()
	assert.NoError(t, ctx.UnmapMemory(testMemory(thisProcess(), 0x2000, 64)))
	m := testMemory(otherProcess(), 0x2000, 64)
	m.mappedOn = 0
	assert.ErrorIs(t, ctx.UnmapMemory(m), errs.ErrInvalidUsage)
}

func TestClosedContext(t *testing.T) {
	ctx := NewContext()
	require.NoError(t, ctx.Close(), "an unused context closes without the driver")
	assert.ErrorIs(t, ctx.Close(), ErrContextClosed)

	_, err := ctx.CreateEndpoint(EndpointConfig{})
	assert.ErrorIs(t, err, ErrContextClosed)
	ep := testEndpoint(thisProcess(), TransportP2P, gpu0, 1)
	_, err = ctx.Connect(ep, ep)
	assert.ErrorIs(t, err, ErrContextClosed)
	_, err = ctx.RegisterMemory(0x1000, 8, TransportP2P)
	assert.ErrorIs(t, err, ErrContextClosed)
	b, _ := testMemory(otherProcess(), 0x2000, 64).MarshalBinary()
	_, err = UnmarshalRegisteredMemory(ctx, b)
	assert.ErrorIs(t, err, ErrContextClosed)
	assert.ErrorIs(t, ctx.UnmapMemory(testMemory(otherProcess(), 0x2000, 64)), ErrContextClosed)
	conn := &Connection{ctx: ctx, local: ep, remote: ep, gpu: &contextGPU{}}
	m := testMemory(thisProcess(), 0x2000, 64)
	assert.ErrorIs(t, conn.Write(m, 0, m, 0, 8), ErrContextClosed)
	assert.ErrorIs(t, conn.UpdateAndSync(m, 8, 1), ErrContextClosed)
	assert.ErrorIs(t, conn.Flush(t.Context()), ErrContextClosed)
	_, err = NewSemaphoreStub(conn)
	assert.ErrorIs(t, err, ErrContextClosed)
}

func TestTokenPool(t *testing.T) {
	var chunks []cuda.DevicePtr
	p := tokenPool{newChunk: func() (cuda.DevicePtr, error) {
		c := cuda.DevicePtr(0x10000 * (len(chunks) + 1))
		chunks = append(chunks, c)
		return c, nil
	}}
	perChunk := tokenChunkBytes / tokenBytes
	seen := map[cuda.DevicePtr]bool{}
	for i := range perChunk + 1 {
		s, reused, err := p.get()
		require.NoError(t, err)
		assert.False(t, reused)
		assert.False(t, seen[s], "slot %d handed out twice", i)
		assert.Zero(t, s%tokenBytes)
		seen[s] = true
	}
	assert.Len(t, chunks, 2, "a new chunk once the first is used up")
	p.put(chunks[0] + 8)
	s, reused, err := p.get()
	require.NoError(t, err)
	assert.True(t, reused, "a returned slot must be zeroed again")
	assert.Equal(t, chunks[0]+8, s)

	failing := tokenPool{newChunk: func() (cuda.DevicePtr, error) { return 0, errs.ErrCUDA }}
	_, _, err = failing.get()
	assert.ErrorIs(t, err, errs.ErrCUDA)
}
