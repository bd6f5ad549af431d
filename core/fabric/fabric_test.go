package fabric

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

func addr(b []byte) uint64 { return uint64(uintptr(unsafe.Pointer(&b[0]))) }

// pair opens two endpoints of provider (on domain) and makes each the other's peer.
func pair(t *testing.T, provider, domain string) (a, b *Endpoint, ab, ba Peer) {
	t.Helper()
	return pairWith(t, Open, provider, domain)
}

// pairWith is pair with the endpoints opened by open.
func pairWith(t *testing.T, open func(provider, domain string) (*Endpoint, error), provider, domain string) (a, b *Endpoint, ab, ba Peer) {
	t.Helper()
	if !Has(provider) {
		t.Skipf("libfabric offers no %s provider here", provider)
	}
	var err error
	a, err = open(provider, domain)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	b, err = open(provider, domain)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	aAddr, err := a.Address()
	require.NoError(t, err)
	bAddr, err := b.Address()
	require.NoError(t, err)
	ab, err = a.AddPeer(bAddr)
	require.NoError(t, err)
	ba, err = b.AddPeer(aAddr)
	require.NoError(t, err)
	return a, b, ab, ba
}

// progressInBackground keeps e progressing until the test ends, as a rank's proxy does: on
// providers with manual progress, a peer's writes (and its connection setup) move only then.
func progressInBackground(t *testing.T, e *Endpoint) {
	t.Helper()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := e.Progress(); err != nil {
				return
			}
			time.Sleep(time.Microsecond)
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// waitWord spins until the 8-byte word at w reads want, making e progress (incoming writes move
// only then on providers with manual progress), or fails after the deadline.
func waitWord(t *testing.T, e, sender *Endpoint, w *uint64, want uint64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for atomic.LoadUint64(w) != want {
		require.NoError(t, e.Progress())
		require.NoError(t, sender.Progress())
		require.False(t, time.Now().After(deadline), "signal %d never came (word reads %d)", want, atomic.LoadUint64(w))
	}
}

// TestPutSignalWait: one endpoint writes n bytes into its peer's memory, then a signal word; the
// peer waits for the signal and finds every byte, for sizes from 1 B to 256 MiB, over the real
// tcp (loopback) and shm providers.
func TestPutSignalWait(t *testing.T) {
	const maxBytes = 256 << 20
	for _, prov := range []struct{ name, domain string }{{"tcp", "lo"}, {"shm", ""}} {
		t.Run(prov.name, func(t *testing.T) {
			a, b, ab, _ := pair(t, prov.name, prov.domain)
			t.Logf("%v and %v", a, b)
			progressInBackground(t, b)
			src := testutil.HostMemory(t, maxBytes)
			dst := testutil.HostMemory(t, maxBytes+8)
			srcReg, err := a.Register(addr(src), maxBytes)
			require.NoError(t, err)
			defer srcReg.Deregister()
			dstReg, err := b.Register(addr(dst), maxBytes+8)
			require.NoError(t, err)
			defer dstReg.Deregister()
			signal := (*uint64)(unsafe.Pointer(&dst[maxBytes]))

			round := uint64(0)
			for n := 1; n <= maxBytes; n *= 4 {
				round++
				for i := range n {
					src[i] = byte(i*7 + int(round))
				}
				require.NoError(t, a.Write(ab, srcReg, 0, dstReg.Remote(), 0, uint64(n)))
				require.NoError(t, a.WriteValue(ab, dstReg.Remote(), maxBytes, round))
				waitWord(t, b, a, signal, round)
				wrong := 0
				for i := range n {
					if dst[i] != byte(i*7+int(round)) {
						wrong++
					}
				}
				assert.Zero(t, wrong, "%d of %d bytes wrong", wrong, n)
				require.NoError(t, a.Flush(context.Background()))
				assert.Zero(t, a.Pending())
			}
		})
	}
}

// TestWriteData: writes with remote CQ data, of no bytes and of bytes past one post, reach the
// peer's data handler in the order posted, each once its bytes have landed; the data that came
// before the handler was set are counted as dropped.
func TestWriteData(t *testing.T) {
	const n = 1 << 20
	for _, prov := range []struct{ name, domain string }{{"tcp", "lo"}, {"shm", ""}} {
		t.Run(prov.name, func(t *testing.T) {
			a, b, ab, _ := pair(t, prov.name, prov.domain)
			if !a.RemoteData() {
				t.Skipf("%v carries no remote CQ data", a)
			}
			src := testutil.HostMemory(t, n)
			dst := testutil.HostMemory(t, n)
			srcReg, err := a.Register(addr(src), n)
			require.NoError(t, err)
			defer srcReg.Deregister()
			dstReg, err := b.Register(addr(dst), n)
			require.NoError(t, err)
			defer dstReg.Deregister()

			progressInBackground(t, b)
			require.NoError(t, a.WriteData(ab, nil, 0, dstReg.Remote(), 0, 0, 99)) // before the handler
			require.NoError(t, a.Flush(context.Background()))
			deadline := time.Now().Add(30 * time.Second)
			for b.DroppedData() == 0 {
				require.False(t, time.Now().After(deadline), "the first data never came")
				time.Sleep(time.Millisecond)
			}

			var mu sync.Mutex // the handler runs on b's progress goroutine
			var got []uint64
			var wrong int
			require.NoError(t, b.SetDataHandler(func(d uint64) {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, d)
				if d%2 == 0 { // even data follow a write of every byte
					for i := range n {
						if dst[i] != byte(i+int(d)) {
							wrong++
						}
					}
				}
			}))
			const writes = 20
			for d := uint64(1); d <= writes; d++ {
				if d%2 == 0 {
					for i := range n {
						src[i] = byte(i + int(d))
					}
					require.NoError(t, a.WriteData(ab, srcReg, 0, dstReg.Remote(), 0, n, d))
					require.NoError(t, a.Flush(context.Background())) // src is rewritten next
				} else {
					require.NoError(t, a.WriteData(ab, nil, 0, dstReg.Remote(), 0, 0, d))
				}
			}
			for {
				mu.Lock()
				came := len(got)
				mu.Unlock()
				if came == writes {
					break
				}
				require.NoError(t, a.Progress())
				require.False(t, time.Now().After(deadline), "%d of %d data came", came, writes)
			}
			mu.Lock()
			defer mu.Unlock()
			for i, d := range got {
				assert.Equal(t, uint64(i+1), d, "data in the order posted")
			}
			assert.Zero(t, wrong, "bytes wrong when their data came")
			assert.EqualValues(t, 1, b.DroppedData())
		})
	}
}

// TestWriteRefusesOutOfRange: writes outside either region are refused before anything is posted.
func TestWriteRefusesOutOfRange(t *testing.T) {
	a, b, ab, _ := pair(t, "tcp", "lo")
	src := testutil.HostMemory(t, 4096)
	dst := testutil.HostMemory(t, 4096)
	s, err := a.Register(addr(src), 4096)
	require.NoError(t, err)
	defer s.Deregister()
	d, err := b.Register(addr(dst), 4096)
	require.NoError(t, err)
	defer d.Deregister()
	tests := []struct {
		name                 string
		srcOff, dstOff, size uint64
	}{
		{"source past its end", 4000, 0, 100},
		{"destination past its end", 0, 4000, 100},
		{"offset overflow", 1 << 63, 0, 1 << 63},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := a.Write(ab, s, tc.srcOff, d.Remote(), tc.dstOff, tc.size)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	}
	assert.ErrorIs(t, a.WriteValue(ab, d.Remote(), 4092, 1), errs.ErrInvalidArgument)
	assert.Zero(t, a.Pending())
}

// TestNetworkProvider: MSCCLPP_NET_PROVIDER wins, if libfabric offers it (else ErrUnavailable
// naming it); without it the first of verbs, efa, cxi, tcp that the machine offers is picked.
func TestNetworkProvider(t *testing.T) {
	have, err := Providers()
	require.NoError(t, err)
	t.Logf("providers: %v", have)
	fmt.Println("providers:", have)
	config.NetProvider.Set("shm")
	p, err := NetworkProvider()
	config.NetProvider.Reset()
	require.NoError(t, err)
	assert.Equal(t, "shm", p)
	config.NetProvider.Set("no-such-provider")
	_, err = NetworkProvider()
	config.NetProvider.Reset()
	require.ErrorIs(t, err, ErrUnavailable)
	assert.ErrorContains(t, err, "no-such-provider")

	p, err = NetworkProvider()
	require.NoError(t, err)
	rank := func(name string) int {
		for i, w := range networkPreference {
			if name == w || len(name) > len(w) && name[:len(w)+1] == w+";" {
				return i
			}
		}
		return -1
	}
	require.GreaterOrEqual(t, rank(p), 0, "picked %q", p)
	for _, q := range have {
		if r := rank(q); r >= 0 {
			assert.LessOrEqual(t, rank(p), r, "picked %q although %q is preferred", p, q)
		}
	}
}

// TestOpenUnknownProvider names the provider and lists the available ones.
func TestOpenUnknownProvider(t *testing.T) {
	_, err := Open("no-such-provider", "")
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrUnavailable)
	assert.Contains(t, err.Error(), `"no-such-provider"`)
	fmt.Println(err)
}

// TestWriteTimesOutWhenPeerStalls: a peer that never progresses (here: never polls) cannot hold a
// writer for ever: the write fails with ErrTimedOut after MSCCLPP_NET_TIMEOUT.
func TestWriteTimesOutWhenPeerStalls(t *testing.T) {
	a, b, ab, _ := pair(t, "shm", "")
	testutil.Override(t, config.NetTimeout, 300*time.Millisecond)
	src := testutil.HostMemory(t, 1<<20)
	dst := testutil.HostMemory(t, 1<<20)
	s, err := a.Register(addr(src), 1<<20)
	require.NoError(t, err)
	defer s.Deregister()
	d, err := b.Register(addr(dst), 1<<20)
	require.NoError(t, err)
	defer d.Deregister()
	start := time.Now()
	var werr error
	for i := 0; i < 1000 && werr == nil; i++ { // until the provider's queue to the stalled peer is full
		werr = a.Write(ab, s, 0, d.Remote(), 0, 1<<20)
	}
	require.ErrorIs(t, werr, ErrTimedOut)
	assert.ErrorIs(t, werr, errs.ErrSystem)
	assert.Less(t, time.Since(start), 10*time.Second)
	t.Log(werr)
}

// TestSignalTimesOutWhenPeerStalls: a peer that stops progressing once connected (here: stops
// polling after a first signal) leaves a large write queued at the writer and every signal behind
// it in flight; once all of WriteValue's source words are in flight, it waits for one for at most
// MSCCLPP_NET_TIMEOUT and then fails with ErrTimedOut, over the real tcp provider. Should the wait
// not end, the peer resumes progressing after the test's own deadline, so the writer comes back
// and the test fails rather than hangs.
func TestSignalTimesOutWhenPeerStalls(t *testing.T) {
	const big = 64 << 20 // more than the sockets between the two endpoints hold
	a, b, ab, _ := pair(t, "tcp", "lo")
	testutil.Override(t, config.NetTimeout, 300*time.Millisecond)
	src := testutil.HostMemory(t, big)
	dst := testutil.HostMemory(t, big+4096)
	s, err := a.Register(addr(src), big)
	require.NoError(t, err)
	defer s.Deregister()
	d, err := b.Register(addr(dst), big+4096)
	require.NoError(t, err)
	defer d.Deregister()

	var stalled atomic.Bool
	stop := make(chan struct{})
	progressed := make(chan struct{})
	go func() {
		defer close(progressed)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !stalled.Load() {
				_ = b.Progress()
			}
			time.Sleep(time.Microsecond)
		}
	}()
	defer func() { stalled.Store(false); close(stop); <-progressed }()

	// Connect while the peer progresses, then stall it.
	require.NoError(t, a.WriteValue(ab, d.Remote(), big, 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, a.Flush(ctx))
	stalled.Store(true)
	time.Sleep(10 * time.Millisecond) // let a Progress under way return

	type result struct {
		sent    int
		err     error
		elapsed time.Duration // of the call that failed
	}
	done := make(chan result, 1)
	go func() {
		if err := a.Write(ab, s, 0, d.Remote(), 0, big); err != nil {
			done <- result{err: err}
			return
		}
		for k := 0; k < 2*valueSlots; k++ {
			start := time.Now()
			if err := a.WriteValue(ab, d.Remote(), big, uint64(k+2)); err != nil {
				done <- result{k, err, time.Since(start)}
				return
			}
		}
		done <- result{sent: 2 * valueSlots}
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		stalled.Store(false) // the writer returns once the peer takes its writes
		r = <-done
		t.Fatalf("WriteValue waited for a free source word past MSCCLPP_NET_TIMEOUT (300ms) and the test's 10 s; came back after the peer resumed with %v", r.err)
	}
	require.ErrorIs(t, r.err, ErrTimedOut, "after %d signals", r.sent)
	assert.ErrorIs(t, r.err, errs.ErrSystem)
	assert.Contains(t, r.err.Error(), "waited for a source word")
	assert.GreaterOrEqual(t, r.sent, valueSlots-1, "a signal failed before every source word was in flight")
	assert.GreaterOrEqual(t, r.elapsed, 300*time.Millisecond)
	assert.Less(t, r.elapsed, 5*time.Second)
	t.Log(r.err)
}

// TestManySignals: more signals in flight than WriteValue has source words; each lands in order,
// so the word ends at the last value and no slot was reused before its write completed.
func TestManySignals(t *testing.T) {
	for _, prov := range []string{"tcp", "shm"} {
		t.Run(prov, func(t *testing.T) {
			a, b, ab, _ := pair(t, prov, "")
			progressInBackground(t, b)
			dst := testutil.HostMemory(t, 4096)
			d, err := b.Register(addr(dst), 4096)
			require.NoError(t, err)
			defer d.Deregister()
			const n = 3 * valueSlots
			for k := uint64(1); k <= n; k++ {
				require.NoError(t, a.WriteValue(ab, d.Remote(), 64, k))
			}
			require.NoError(t, a.Flush(context.Background()))
			word := (*uint64)(unsafe.Pointer(&dst[64]))
			deadline := time.Now().Add(10 * time.Second)
			for atomic.LoadUint64(word) != n && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			assert.Equal(t, uint64(n), atomic.LoadUint64(word))
		})
	}
}

// TestDomains: the providers name their domains (tcp: the interfaces, loopback among them).
func TestDomains(t *testing.T) {
	if !Has("tcp") {
		t.Skip("libfabric offers no tcp provider here")
	}
	d, err := Domains("tcp")
	require.NoError(t, err)
	assert.Contains(t, d, "lo")
	none, err := Domains("no-such-provider")
	require.NoError(t, err)
	assert.Empty(t, none)
}

// TestHMEM: an endpoint's HMEM says what libfabric's own fi_info says of its provider: whether it
// offers an RDM endpoint with RMA and FI_HMEM (on Debian 12's libfabric 1.17, shm does and tcp
// does not), and OpenDeviceMemory agrees (checkDeviceMemory). Where fi_info is missing (the GPU
// hosts) it only logs what HMEM says.
func TestHMEM(t *testing.T) {
	for _, provider := range []string{"tcp", "shm"} {
		t.Run(provider, func(t *testing.T) {
			if !Has(provider) {
				t.Skipf("libfabric offers no %s provider here", provider)
			}
			e, err := Open(provider, "")
			require.NoError(t, err)
			defer e.Close()
			t.Logf("%s on %s: FI_HMEM offered: %v", e.Provider(), e.Domain(), e.HMEM())
			checkDeviceMemory(t, e, provider)
			fiInfo, err := exec.LookPath("fi_info")
			if err != nil {
				t.Skip("fi_info (libfabric-bin) is not installed")
			}
			out, _ := exec.Command(fiInfo, "-p", e.Provider(), "-d", e.Domain(), "-t", "FI_EP_RDM", "-c", "FI_RMA|FI_HMEM").CombinedOutput()
			want := strings.Contains(string(out), "domain: "+e.Domain())
			assert.Equal(t, want, e.HMEM(), "fi_info -p %s -d %s -t FI_EP_RDM -c 'FI_RMA|FI_HMEM' said:\n%s", e.Provider(), e.Domain(), out)
		})
	}
}
