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
	for _, tc := range hostProviders {
		t.Run(tc.name, func(t *testing.T) {
			useProvider(t, tc.transport, tc.provider)
			h := connectHostMemory(t, tc.transport, maxBytes, maxBytes+8)
			sender, rEP, conn, src, dst, srcMem, dstThere := h.sender, h.rEP, h.conn, h.src, h.dst, h.srcMem, h.dstThere
			signal := (*uint64)(unsafe.Pointer(&dst[maxBytes]))
			if tc.provider == "tcp" { // a tcp listener to knock on
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
			_, err := NewSemaphoreStub(conn)
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

// hostProviders are the libfabric transports the CPU tests run on, with their providers: tcp and
// udp (libfabric's rxd: its own reliable protocol over datagrams, as efa's RDM is) for the
// network, shm for shared memory.
var hostProviders = []struct {
	name      string
	transport Transport
	provider  string
}{
	{"network over tcp", TransportIB, "tcp"},
	{"shared memory", TransportSHM, "shm"},
	{"network over udp", TransportIB, "udp"},
}

// useProvider skips t where libfabric offers no such provider, and makes the network transport
// use it.
func useProvider(t testing.TB, transport Transport, provider string) {
	t.Helper()
	if !fabric.Has(provider) {
		t.Skipf("libfabric offers no %s provider here", provider)
	}
	if transport == TransportIB {
		testutil.Override(t, config.NetProvider, provider)
	}
}

// hostPair is a connection between two contexts of this process over a libfabric transport,
// with host memory registered on both sides; the receiver's memory is reached as a peer's would
// be (in wire form).
type hostPair struct {
	sender, receiver *Context
	rEP              Endpoint // the receiver's endpoint
	conn             *Connection
	src, dst         []byte // the sender's and the receiver's memory
	srcMem, dstThere RegisteredMemory
}

func connectHostMemory(t *testing.T, transport Transport, srcBytes, dstBytes int) hostPair {
	t.Helper()
	// The memory first: cleanups run last-in first-out, and the contexts must close before it is
	// freed (the receiver first, as a peer that stops before the sender).
	h := hostPair{src: testutil.HostMemory(t, srcBytes), dst: testutil.HostMemory(t, dstBytes)}
	h.sender, h.receiver = NewContext(), NewContext()
	t.Cleanup(func() { assert.NoError(t, h.sender.Close()) })
	t.Cleanup(func() { assert.NoError(t, h.receiver.Close()) })
	cpu := EndpointConfig{Transport: transport, Device: Device{Type: DeviceCPU}}
	sEP, err := h.sender.CreateEndpoint(cpu)
	require.NoError(t, err)
	h.rEP, err = h.receiver.CreateEndpoint(cpu)
	require.NoError(t, err)
	// Endpoints travel in wire form, as between processes.
	wire, err := h.rEP.MarshalBinary()
	require.NoError(t, err)
	rEPThere, err := UnmarshalEndpoint(wire)
	require.NoError(t, err)
	h.conn, err = h.sender.Connect(sEP, rEPThere)
	require.NoError(t, err)
	h.srcMem, err = h.sender.RegisterMemory(ptrOf(h.src), uint64(srcBytes), transport)
	require.NoError(t, err)
	dstMem, err := h.receiver.RegisterMemory(ptrOf(h.dst), uint64(dstBytes), transport)
	require.NoError(t, err)
	wire, err = dstMem.MarshalBinary()
	require.NoError(t, err)
	h.dstThere, err = UnmarshalRegisteredMemory(h.sender, wire)
	require.NoError(t, err)
	return h
}

// TestFabricSignalsAsData: where the provider carries remote CQ data (tcp and shm do), signals
// ride on writes (transport_fabric_signals.go). WriteWithSignal delivers its data before its
// signal; signals to many words, in each of their forms (parts, steps, small values), and signals
// alone mixed with signals on writes, all land as queued.
func TestFabricSignalsAsData(t *testing.T) {
	const dataBytes, words = 4 << 20, 300
	for _, tc := range hostProviders {
		t.Run(tc.name, func(t *testing.T) {
			useProvider(t, tc.transport, tc.provider)
			h := connectHostMemory(t, tc.transport, dataBytes, dataBytes+8*words)
			n, err := h.sender.fabric(tc.transport, -1)
			require.NoError(t, err)
			if n.sig == nil {
				t.Skipf("the %s provider carries no remote CQ data here", tc.provider)
			}
			word := func(i int) *uint64 { return (*uint64)(unsafe.Pointer(&h.dst[dataBytes+8*i])) }
			waitFor := func(i int, want uint64) {
				t.Helper()
				deadline := time.Now().Add(30 * time.Second)
				for atomic.LoadUint64(word(i)) != want { // the receiver's context progresses on its own
					require.False(t, time.Now().After(deadline), "word %d: %#x never came (holds %#x)", i, want, atomic.LoadUint64(word(i)))
					time.Sleep(10 * time.Microsecond)
				}
			}

			// Data, then its signal, as one write each; sizes past one post (256 KiB on tcp).
			for round, size := range []int{1, 8, 4096, 300 << 10, dataBytes} {
				for i := range size {
					h.src[i] = byte(i*7 + round)
				}
				require.NoError(t, h.conn.WriteWithSignal(h.dstThere, 0, h.srcMem, 0, uint64(size), h.dstThere, dataBytes, uint64(round+1)))
				waitFor(0, uint64(round+1))
				wrong := 0
				for i := range size {
					if h.dst[i] != byte(i*7+round) {
						wrong++
					}
				}
				require.Zero(t, wrong, "%d B: %d bytes wrong when the signal came", size, wrong)
			}

			// Many words, each signalled three times: a large value (in parts), a step up, a
			// small value.
			value := func(pass uint64, i int) uint64 {
				return []uint64{1<<40 + uint64(i)<<20, 1<<40 + uint64(i)<<20 + 3, uint64(i)}[pass]
			}
			for pass := range uint64(3) {
				for i := range words {
					if i%2 == 0 {
						require.NoError(t, h.conn.UpdateAndSync(h.dstThere, uint64(dataBytes+8*i), value(pass, i)))
					} else {
						require.NoError(t, h.conn.WriteWithSignal(h.dstThere, 0, h.srcMem, 0, 8, h.dstThere, uint64(dataBytes+8*i), value(pass, i)))
					}
				}
				for i := range words {
					waitFor(i, value(pass, i))
				}
			}

			// Signals to one word, alone and on writes, land in the order queued: the last wins.
			for v := uint64(1); v <= 1000; v++ {
				if v%3 == 0 {
					require.NoError(t, h.conn.UpdateAndSync(h.dstThere, dataBytes, v<<40))
				} else {
					require.NoError(t, h.conn.WriteWithSignal(h.dstThere, 0, h.srcMem, 0, 64, h.dstThere, dataBytes, v<<40))
				}
			}
			waitFor(0, 1000<<40)
			require.NoError(t, h.conn.Flush(context.Background()))

			rn, err := h.receiver.fabric(tc.transport, -1)
			require.NoError(t, err)
			rn.sig.mu.Lock()
			assert.Zero(t, rn.sig.rejected, "entries refused: first %v", rn.sig.firstBad)
			rn.sig.mu.Unlock()
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
