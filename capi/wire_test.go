package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/mscclpp-go/mscclpp/core"
)

// The wire lengths capi assumes are core's, and fit the C structs of core.h.
func TestWireLengthsFitCStructs(t *testing.T) {
	for _, c := range []struct {
		what        string
		wire, cSize int
	}{
		{"endpoint", endpointWireBytes, cEndpointBytes},
		{"semaphore stub", stubWireBytes, cSemaphoreStubBytes},
		{"registered memory", memoryWireBytes, cMemoryDescBytes},
	} {
		if c.wire > c.cSize {
			t.Errorf("%s: encoding of %d bytes does not fit the C struct of %d", c.what, c.wire, c.cSize)
		}
	}
	if cEndpointBytes != 256 || cSemaphoreStubBytes != 384 || cMemoryDescBytes != 128 {
		t.Errorf("C sizes %d, %d, %d; core.h documents 256, 384, 128", cEndpointBytes, cSemaphoreStubBytes, cMemoryDescBytes)
	}
}

// Representative endpoints (CPU and GPU configs, as far as this host allows) encode to
// endpointWireBytes, and decode from the padded C struct.
func TestEndpointWire(t *testing.T) {
	ctx := core.NewContext()
	defer ctx.Close()
	eps := []core.Endpoint{{}}
	if ep, err := ctx.CreateEndpoint(core.EndpointConfig{Transport: core.TransportP2P, Device: core.Device{Type: core.DeviceCPU}}); err == nil {
		eps = append(eps, ep)
	} else {
		t.Logf("no CPU endpoint here: %v", err)
	}
	for _, ep := range eps {
		b, err := ep.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != endpointWireBytes {
			t.Errorf("%v encodes to %d bytes, capi assumes %d", ep, len(b), endpointWireBytes)
		}
		padded := make([]byte, cEndpointBytes)
		copy(padded, b)
		got, err := core.UnmarshalEndpoint(padded[:endpointWireBytes])
		if err != nil {
			t.Fatalf("decode %v from the C struct: %v", ep, err)
		}
		if got.ID() != ep.ID() || got.Config() != ep.Config() {
			t.Errorf("decoded %v, want %v", got, ep)
		}
	}
}

// Without a GPU no registered memory or stub can be made here: check instead that core's decoders
// take exactly the assumed lengths (zeros of that length fail on their content, not their length).
func TestMemoryAndStubWireLengths(t *testing.T) {
	ctx := core.NewContext()
	defer ctx.Close()
	decoders := []struct {
		what   string
		n      int
		sentry error
		decode func([]byte) error
	}{
		{"registered memory", memoryWireBytes, core.ErrBadRegisteredMemory, func(b []byte) error {
			_, err := core.UnmarshalRegisteredMemory(ctx, b)
			return err
		}},
		{"semaphore stub", stubWireBytes, core.ErrBadSemaphoreStub, func(b []byte) error {
			_, err := core.UnmarshalSemaphoreStub(ctx, b)
			return err
		}},
	}
	isLengthError := func(err error) bool { return strings.Contains(err.Error(), "bytes, want") }
	for _, d := range decoders {
		for _, n := range []int{d.n - 1, d.n + 1} {
			if err := d.decode(make([]byte, n)); err == nil || !isLengthError(err) {
				t.Errorf("%s of %d bytes: %v, want a length error", d.what, n, err)
			}
		}
		err := d.decode(make([]byte, d.n))
		if err == nil || !errors.Is(err, d.sentry) || isLengthError(err) {
			t.Errorf("%s: zeros of %d bytes: %v, want %v for their content, not their length", d.what, d.n, err, d.sentry)
		}
	}
}
