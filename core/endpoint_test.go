package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

func TestEndpointRoundTrip(t *testing.T) {
	tests := []Endpoint{
		testEndpoint(thisProcess(), TransportP2P, gpu0, 1),
		testEndpoint(otherHost(), TransportIB, Device{Type: DeviceGPU, ID: 7}, 1<<63|5),
		testEndpoint(otherProcess(), TransportSHM, Device{Type: DeviceCPU}, 0),
	}
	for _, ep := range tests {
		b, err := ep.MarshalBinary()
		require.NoError(t, err)
		require.Len(t, b, endpointBytes)
		got, err := UnmarshalEndpoint(b)
		require.NoError(t, err)
		assert.Equal(t, ep, got)
		assert.Equal(t, ep.Config(), got.Config())
		assert.Equal(t, ep.HostHash(), got.HostHash())
		assert.Equal(t, ep.PID(), got.PID())
		assert.Equal(t, ep.ID(), got.ID())
	}
}

func TestUnmarshalEndpointRefuses(t *testing.T) {
	valid, _ := testEndpoint(thisProcess(), TransportP2P, gpu0, 9).MarshalBinary()
	corrupt := func(edit func([]byte) []byte) []byte { return edit(append([]byte(nil), valid...)) }
	tests := map[string][]byte{
		"empty":             nil,
		"truncated":         valid[:len(valid)-1],
		"trailing byte":     append(append([]byte(nil), valid...), 0),
		"wrong magic":       corrupt(func(b []byte) []byte { b[0] ^= 0xff; return b }),
		"wrong version":     corrupt(func(b []byte) []byte { b[4] = 1; return b }),
		"reserved set":      corrupt(func(b []byte) []byte { b[52] = 1; return b }),
		"address too long":  corrupt(func(b []byte) []byte { b[48] = maxAddressBytes + 1; return b }),
		"bytes after it":    corrupt(func(b []byte) []byte { b[48], b[60] = 3, 7; return b }),
		"unknown transport": corrupt(func(b []byte) []byte { b[8] = 9; return b }),
		"unknown device":    corrupt(func(b []byte) []byte { b[12] = 5; return b }),
		"negative GPU":      corrupt(func(b []byte) []byte { b[16], b[17], b[18], b[19] = 0xff, 0xff, 0xff, 0xff; return b }),
		"CPU with an id":    corrupt(func(b []byte) []byte { b[12], b[16] = 0, 3; return b }),
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := UnmarshalEndpoint(b)
			assert.ErrorIs(t, err, ErrBadEndpoint)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	}
}

func FuzzUnmarshalEndpoint(f *testing.F) {
	for _, ep := range []Endpoint{
		testEndpoint(thisProcess(), TransportP2P, gpu0, 1),
		testEndpoint(otherHost(), TransportIB, Device{Type: DeviceCPU}, 2),
		func() Endpoint {
			e := testEndpoint(otherHost(), TransportSHM, Device{Type: DeviceCPU}, 3)
			e.address = "fi_shm://12345"
			return e
		}(),
	} {
		b, _ := ep.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte("MSEP"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ep, err := UnmarshalEndpoint(b)
		if err != nil {
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			return
		}
		again, err := ep.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, b, again)
	})
}

func TestHostIdentity(t *testing.T) {
	a := hashHostIdentity("node1", "boot-a")
	assert.Equal(t, a, hashHostIdentity("node1", "boot-a"))
	assert.NotEqual(t, a, hashHostIdentity("node2", "boot-a"), "host name counts")
	assert.NotEqual(t, a, hashHostIdentity("node1", "boot-b"), "boot id counts")
	assert.NotEqual(t, hashHostIdentity("ab", "c"), hashHostIdentity("a", "bc"), "the parts are separated")

	// MSCCLPP_HOSTID replaces the machine's identity: different values, different hosts.
	t.Cleanup(config.HostID.Reset)
	machine := hostHash()
	config.HostID.Set("host-a")
	hostA := hostHash()
	config.HostID.Set("host-b")
	assert.NotEqual(t, hostA, hostHash(), "two MSCCLPP_HOSTID values")
	assert.NotEqual(t, machine, hostA, "MSCCLPP_HOSTID against the machine's identity")
	config.HostID.Set("host-a")
	assert.Equal(t, hostA, hostHash())
	config.HostID.Reset()

	here := thisProcess()
	assert.Equal(t, here, thisProcess(), "drawn once")
	assert.NotZero(t, here.process)
	tests := []struct {
		name                  string
		o                     origin
		sameHost, sameProcess bool
	}{
		{"this process", here, true, true},
		{"another process", otherProcess(), true, false},
		{"same pid, another container", origin{host: here.host, pid: here.pid, process: here.process + 2}, true, false},
		{"another host", otherHost(), false, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.sameHost, tc.o.sameHost(here), tc.name)
		assert.Equal(t, tc.sameProcess, tc.o.sameProcess(here), tc.name)
	}
}
