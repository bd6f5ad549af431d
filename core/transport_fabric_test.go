package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

func ptrOf(b []byte) cuda.DevicePtr { return cuda.DevicePtr(uintptr(unsafe.Pointer(&b[0]))) }

// TestFabricHostMemory: two contexts (two ranks' worth of objects) connect host-memory endpoints
// over the real libfabric tcp (loopback) and shm providers, exchange their endpoints and memory
// in wire form, and one writes 1 B to 64 MiB into the other's memory, then a signal word
// (UpdateAndSync); the receiver waits for the signal and checks every byte, and Flush returns
// once the writes have completed.
func TestFabricHostMemory(t *testing.T) {
	const maxBytes = 64 << 20
	for _, tc := range []struct {
		name      string
		transport Transport
		provider  string
	}{
		{"network over tcp", TransportIB, "tcp"},
		{"shared memory", TransportSHM, "shm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !fabric.Has(tc.provider) {
				t.Skipf("libfabric offers no %s provider here", tc.provider)
			}
			if tc.transport == TransportIB {
				testutil.Override(t, config.NetProvider, tc.provider)
			}
			sender, receiver := NewContext(), NewContext()
			defer func() { assert.NoError(t, sender.Close()) }()
			defer func() { assert.NoError(t, receiver.Close()) }()
			cpu := EndpointConfig{Transport: tc.transport, Device: Device{Type: DeviceCPU}}
			sEP, err := sender.CreateEndpoint(cpu)
			require.NoError(t, err)
			rEP, err := receiver.CreateEndpoint(cpu)
			require.NoError(t, err)
			// Endpoints travel in wire form, as between processes.
			wire, err := rEP.MarshalBinary()
			require.NoError(t, err)
			rEPThere, err := UnmarshalEndpoint(wire)
			require.NoError(t, err)
			conn, err := sender.Connect(sEP, rEPThere)
			require.NoError(t, err)

			src := testutil.HostMemory(t, maxBytes)
			dst := testutil.HostMemory(t, maxBytes+8)
			srcMem, err := sender.RegisterMemory(ptrOf(src), maxBytes, tc.transport)
			require.NoError(t, err)
			dstMem, err := receiver.RegisterMemory(ptrOf(dst), maxBytes+8, tc.transport)
			require.NoError(t, err)
			wire, err = dstMem.MarshalBinary()
			require.NoError(t, err)
			dstThere, err := UnmarshalRegisteredMemory(sender, wire)
			require.NoError(t, err)
			signal := (*uint64)(unsafe.Pointer(&dst[maxBytes]))
			if tc.transport == TransportIB {
				stranger(t, rEP)
			}

			round := uint64(0)
			for n := 1; n <= maxBytes; n *= 8 {
				round++
				for i := range n {
					src[i] = byte(i*13 + int(round))
				}
				require.NoError(t, conn.Write(dstThere, 0, srcMem, 0, uint64(n)))
				require.NoError(t, conn.UpdateAndSync(dstThere, maxBytes, round))
				deadline := time.Now().Add(30 * time.Second)
				for atomic.LoadUint64(signal) != round { // the receiver's context progresses on its own
					require.False(t, time.Now().After(deadline), "signal %d never came", round)
					time.Sleep(10 * time.Microsecond)
				}
				wrong := 0
				for i := range n {
					if dst[i] != byte(i*13+int(round)) {
						wrong++
					}
				}
				assert.Zero(t, wrong, "%d B: %d bytes wrong", n, wrong)
				require.NoError(t, conn.Flush(context.Background()))
			}

			// Ranges are checked before anything is posted.
			assert.Error(t, conn.Write(dstThere, maxBytes, srcMem, 0, 16))
			assert.Error(t, conn.UpdateAndSync(dstThere, 4, 1), "unaligned signal")
			_, err = NewSemaphoreStub(conn)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument, "host memory connections signal with UpdateAndSync")

			// A source deregistered is no longer written from; a new registration of the same
			// memory works; a second deregistration and a peer's memory are refused.
			require.NoError(t, sender.DeregisterMemory(srcMem))
			assert.ErrorIs(t, conn.Write(dstThere, 0, srcMem, 0, 8), errs.ErrInvalidArgument)
			assert.ErrorIs(t, sender.DeregisterMemory(srcMem), errs.ErrInvalidUsage)
			assert.ErrorIs(t, sender.DeregisterMemory(dstThere), errs.ErrInvalidUsage, "a peer's memory is not this context's")
			again, err := sender.RegisterMemory(ptrOf(src), 8, tc.transport)
			require.NoError(t, err)
			require.NoError(t, conn.Write(dstThere, 0, again, 0, 8))
			require.NoError(t, conn.Flush(context.Background()))
		})
	}
}

// stranger connects to the tcp port a network endpoint listens on (its address is a
// sockaddr_in: family, port, IPv4 address) and sends bytes that are no protocol's, then stays
// connected: the job must go on undisturbed.
func stranger(t *testing.T, ep Endpoint) {
	t.Helper()
	a := []byte(ep.address)
	if len(a) < 8 || binary.LittleEndian.Uint16(a) != syscall.AF_INET {
		t.Logf("the endpoint's address is not IPv4 (%d bytes); no stranger", len(a))
		return
	}
	addr := net.JoinHostPort(net.IP(a[4:8]).String(), strconv.Itoa(int(binary.BigEndian.Uint16(a[2:4]))))
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err, "a stranger dials %s", addr)
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = byte(i*97 + 13)
	}
	_, _ = c.Write(junk)
	t.Cleanup(func() { _ = c.Close() })
	t.Logf("a stranger connected to %s and sent %d bytes of junk", addr, len(junk))
}

// TestFabricMissingLibrary: where libfabric cannot be loaded, asking for a network or
// shared-memory endpoint fails with ErrTransportUnavailable naming the library, and everything
// else goes on (the library loads anywhere). Runs in a child process, since libfabric is loaded
// once per process.
func TestFabricMissingLibrary(t *testing.T) {
	const missing = "/nonexistent/libfabric.so.1"
	if os.Getenv("MSCCLPP_FABRIC_LIBRARY") == missing {
		ctx := NewContext()
		defer ctx.Close()
		for _, tr := range []Transport{TransportIB, TransportSHM} {
			_, err := ctx.CreateEndpoint(EndpointConfig{Transport: tr, Device: Device{Type: DeviceCPU}})
			require.ErrorIs(t, err, ErrTransportUnavailable, "%v", tr)
			require.ErrorContains(t, err, missing)
			fmt.Println(err)
		}
		_, err := ctx.CreateEndpoint(EndpointConfig{Transport: TransportP2P, Device: Device{Type: DeviceCPU}})
		require.NoError(t, err, "CUDA IPC endpoints do not need libfabric")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFabricMissingLibrary$", "-test.count=1")
	cmd.Env = append(os.Environ(), "MSCCLPP_FABRIC_LIBRARY="+missing)
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "create endpoint for CPU over IB")
}
