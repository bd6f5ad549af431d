package core

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// requireNoGPU skips tests that check the GPU paths fail cleanly, on machines that have a GPU.
func requireNoGPU(t *testing.T) {
	t.Helper()
	if n, err := cuda.DeviceCount(); err == nil {
		t.Skipf("this machine has %d GPU(s); the test checks the behavior without one", n)
	}
}

// assertNoGPUError checks that err is the driver's "no device" (or "no driver") error. It does
// not stop the test, so goroutines other than the test's may call it.
func assertNoGPUError(t *testing.T, err error) {
	t.Helper()
	assert.ErrorIs(t, err, errs.ErrCUDA)
	assert.True(t, errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrDriverNotFound), "want no device or no driver, got %v", err)
}

// otherProcess is an origin on this host but in another process.
func otherProcess() origin {
	o := thisProcess()
	o.process ^= 0xff00
	o.pid++
	return o
}

// otherHost is an origin on another host.
func otherHost() origin {
	o := otherProcess()
	o.host ^= 1
	return o
}

// testEndpoint is an endpoint of the given origin, made without asking the driver.
func testEndpoint(o origin, transport Transport, dev Device, id uint64) Endpoint {
	return Endpoint{config: EndpointConfig{Transport: transport, Device: dev}, origin: o, id: id}
}

// testMemory is a registration of size bytes at addr on GPU 0 by o, made without the driver.
func testMemory(o origin, addr, size uint64) RegisteredMemory {
	m := RegisteredMemory{
		data: cuda.DevicePtr(addr), size: size, transport: TransportP2P,
		origin: o, device: 0, addr: cuda.DevicePtr(addr), offset: addr % 4096, mappedOn: notMapped,
	}
	for i := range m.handle {
		m.handle[i] = byte(i + int(addr))
	}
	return m
}

var gpu0 = Device{Type: DeviceGPU, ID: 0}

// withAddress gives e a (made-up) network address.
func withAddress(e Endpoint) Endpoint {
	e.address = "peer-address"
	return e
}
