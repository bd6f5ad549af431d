package core

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/logging"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// hostStaging stands in host memory for GPU memory in the staged path's copies, on a machine
// without a GPU: "device" addresses are those of the slices it was given, and a copy is a copy.
type hostStaging struct{ mem [][]byte }

// at returns the n bytes at p, which must lie in one of the slices.
func (h *hostStaging) at(p cuda.DevicePtr, n int) []byte {
	for _, b := range h.mem {
		if base := ptrOf(b); p >= base && uint64(p-base)+uint64(n) <= uint64(len(b)) {
			return b[p-base : int(p-base)+n]
		}
	}
	panic(fmt.Sprintf("hostStaging: %d bytes at %#x are in no slice", n, uint64(p)))
}

func (h *hostStaging) toHost(dst []byte, src cuda.DevicePtr, _ int) error {
	copy(dst, h.at(src, len(dst)))
	return nil
}

func (h *hostStaging) fromHost(dst cuda.DevicePtr, src []byte, _ int) (func() (bool, error), error) {
	if len(src) == 8 { // a signal: one store, as the GPU's copy of a word is
		atomic.StoreUint64((*uint64)(unsafe.Pointer(&h.at(dst, 8)[0])), binary.LittleEndian.Uint64(src))
		return nil, nil
	}
	copy(h.at(dst, len(src)), src)
	return nil, nil
}

// stagedPair opens two libfabric endpoints of transport t whose staged copies go through host
// memory, as two ranks' contexts would, and a staged link from the first to the second.
func stagedPair(t testing.TB, tr Transport, provider string, staging stagingCopier) (sender, receiver *fabricNet, l link) {
	t.Helper()
	useProvider(t, tr, provider)
	var err error
	sender, err = openFabric(tr, "", staging)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, sender.close()) })
	receiver, err = openFabric(tr, "", staging)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, receiver.close()) })
	addr, err := receiver.ep.Address()
	require.NoError(t, err)
	l, err = sender.connectStaged(Endpoint{address: string(addr)}, nil)
	require.NoError(t, err)
	return sender, receiver, l
}

// stagedMemory registers b with n as staged GPU memory and returns it as the owner and, in wire
// form and back, as a peer sees it.
func stagedMemory(t testing.TB, n *fabricNet, b []byte) (mine, theirs RegisteredMemory) {
	t.Helper()
	h, err := n.registerStaged(ptrOf(b), uint64(len(b)), 0, nil)
	require.NoError(t, err)
	mine = RegisteredMemory{data: ptrOf(b), size: uint64(len(b)), transport: n.transport, origin: thisProcess(),
		addr: ptrOf(b), handle: h, mappedOn: notMapped}
	wire, err := mine.MarshalBinary()
	require.NoError(t, err)
	theirs, err = decodeRegisteredMemory(wire)
	require.NoError(t, err)
	return mine, theirs
}

// TestStagedWrites: GPU memory over libfabric, staged through host buffers (host memory stands
// in for the GPU's here), over the real tcp and shm providers: writes of 1 B to 9 MiB (several
// chunks) at an offset, each followed by a signal, arrive whole and before their signal, and the
// link is flushed after each.
func TestStagedWrites(t *testing.T) {
	const maxBytes = 9<<20 + 3
	for _, tc := range hostProviders {
		t.Run(tc.name, func(t *testing.T) {
			src := testutil.HostMemory(t, maxBytes)
			dst := testutil.HostMemory(t, maxBytes+64)
			staging := &hostStaging{mem: [][]byte{src, dst}}
			sender, receiver, l := stagedPair(t, tc.transport, tc.provider, staging)
			srcMem, _ := stagedMemory(t, sender, src)
			_, dstThere := stagedMemory(t, receiver, dst)
			signal := (*uint64)(unsafe.Pointer(&dst[maxBytes+56]))

			round := uint64(0)
			for _, n := range []int{1, 7, 4096, stagedChunkBytes - 1, stagedChunkBytes, stagedChunkBytes + 1, 3 << 20, maxBytes - 8} {
				round++
				for i := range n {
					src[i] = byte(i*13 + int(round))
				}
				require.NoError(t, l.write(dstThere, 8, srcMem, 0, uint64(n)))
				require.NoError(t, l.writeValue(dstThere, maxBytes+56, round))
				deadline := time.Now().Add(30 * time.Second)
				for atomic.LoadUint64(signal) != round { // the receiver progresses on its own
					require.False(t, time.Now().After(deadline), "signal %d never came", round)
					time.Sleep(10 * time.Microsecond)
				}
				wrong := 0
				for i := range n {
					if dst[8+i] != byte(i*13+int(round)) {
						wrong++
					}
				}
				assert.Zero(t, wrong, "%d B: %d bytes wrong", n, wrong)
				for {
					done, err := l.flushed()
					require.NoError(t, err)
					if done {
						break
					}
				}
			}
		})
	}
}

// gatedStaging is hostStaging whose copies into "GPU" memory run, and report completion, only
// once the test lets them: copy i (in the order the receiver starts them) runs once allowed > i,
// as a GPU copy still running would hold its landing slot.
type gatedStaging struct {
	hostStaging
	started atomic.Int64
	allowed atomic.Int64
}

func (g *gatedStaging) fromHost(dst cuda.DevicePtr, src []byte, device int) (func() (bool, error), error) {
	i, copied := g.started.Add(1)-1, false
	return func() (bool, error) {
		if g.allowed.Load() <= i {
			return false, nil
		}
		if !copied {
			copied = true
			if _, err := g.hostStaging.fromHost(dst, src, device); err != nil {
				return false, err
			}
		}
		return true, nil
	}, nil
}

// TestStagedWaitLanded: over the real tcp provider, staged writes that have left (flushed) have
// not landed while the receiver's copies into its GPU still run; they land once every copy of the
// chunks written before the mark has completed (one held copy is enough to wait), whatever was
// written after the mark, with every byte in place and no signal needed to know it.
func TestStagedWaitLanded(t *testing.T) {
	const n = 3*stagedChunkBytes + 5 // 4 chunks
	src := testutil.HostMemory(t, n+1)
	dst := testutil.HostMemory(t, n+1)
	staging := &gatedStaging{hostStaging: hostStaging{mem: [][]byte{src, dst}}}
	sender, receiver, l := stagedPair(t, TransportIB, "tcp", staging)
	srcMem, _ := stagedMemory(t, sender, src)
	_, dstThere := stagedMemory(t, receiver, dst)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	lander, ok := l.(landingLink)
	require.True(t, ok, "a staged link tells when its writes have landed")
	poll := func(what string, f func() (bool, error)) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			done, err := f()
			require.NoError(t, err)
			if done {
				return
			}
			require.False(t, time.Now().After(deadline), "%s never came", what)
			time.Sleep(10 * time.Microsecond)
		}
	}
	notLanded := func(mark uint64, what string) {
		t.Helper()
		for range 10 {
			done, err := lander.landed(mark)
			require.NoError(t, err)
			require.False(t, done, "landed with %s", what)
			time.Sleep(time.Millisecond)
		}
	}

	require.NoError(t, l.write(dstThere, 0, srcMem, 0, n))
	mark := lander.landingMark()
	poll("the flush", l.flushed)
	for held := range int64(4) {
		staging.allowed.Store(held)
		notLanded(mark, fmt.Sprintf("%d of 4 copies held", 4-held))
	}
	// A write after the mark, its copy held: the mark's writes land without it.
	require.NoError(t, l.write(dstThere, n, srcMem, n, 1))
	later := lander.landingMark()
	staging.allowed.Store(4)
	poll("the landing", func() (bool, error) { return lander.landed(mark) })
	assert.Equal(t, src[:n], dst[:n])
	notLanded(later, "the write after the mark held")
	staging.allowed.Store(5)
	poll("the later landing", func() (bool, error) { return lander.landed(later) })
	assert.Equal(t, src, dst)
}

// TestStagedRefusals: a staged message that names memory the receiver never registered, or a
// range past it, is refused by the receiver with an error naming what was wrong, before any
// byte is copied; a write whose destination is not staged memory is refused by the sender.
func TestStagedRefusals(t *testing.T) {
	mem := testutil.HostMemory(t, 4096)
	staging := &hostStaging{mem: [][]byte{mem}}
	sender, receiver, l := stagedPair(t, TransportSHM, "shm", staging)
	srcMem, _ := stagedMemory(t, sender, mem[:1024])
	_, dstThere := stagedMemory(t, receiver, mem[2048:3072])

	forged := dstThere
	binary.LittleEndian.PutUint64(forged.handle[:], binary.LittleEndian.Uint64(dstThere.handle[:])+1000)
	hostMem := dstThere
	hostMem.handle[16] = 0
	assert.ErrorIs(t, l.write(hostMem, 0, srcMem, 0, 8), errs.ErrInvalidArgument, "host memory is no staged destination")

	for _, tc := range []struct {
		name string
		send func() error
		want string
	}{
		{"unknown key", func() error { return l.writeValue(forged, 0, 1) }, "names no GPU memory registered here"},
		{"past the end", func() error {
			big := dstThere
			big.size = 4096 // the sender believes a larger size than the owner registered
			return l.write(big, 1020, srcMem, 0, 8)
		}, "writes 8 bytes at offset 1020 of 1024 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := append([]byte(nil), mem...)
			receiver.mu.Lock()
			receiver.rejected = nil
			receiver.mu.Unlock()
			require.NoError(t, tc.send())
			require.NoError(t, sender.ep.Flush(context.Background()))
			var err error
			deadline := time.Now().Add(30 * time.Second)
			for err == nil && time.Now().Before(deadline) { // the receiver progresses on its own
				time.Sleep(10 * time.Microsecond)
				err = receiver.rejection()
			}
			require.ErrorIs(t, err, errs.ErrRemote)
			assert.Contains(t, err.Error(), tc.want)
			assert.Equal(t, before, mem, "no byte may change")
		})
	}
}

// TestStagedBothWays: two endpoints write 16 MiB into each other at once, over and over, so that
// each side's sends wait for the other's receive buffers while its own are filling: neither may
// wait for the other with its endpoint locked (which would stop it from taking the peer's
// messages), so both finish, every byte right.
func TestStagedBothWays(t *testing.T) {
	const size = 16 << 20
	for _, provider := range []string{"tcp", "shm"} {
		t.Run(provider, func(t *testing.T) {
			tr := TransportIB
			if provider == "shm" {
				tr = TransportSHM
			}
			bufs := make([][]byte, 4) // a's source, a's destination, b's source, b's destination
			for i := range bufs {
				bufs[i] = testutil.HostMemory(t, size+8)
			}
			staging := &hostStaging{mem: bufs}
			a, b, ab := stagedPair(t, tr, provider, staging)
			addr, err := a.ep.Address()
			require.NoError(t, err)
			ba, err := b.connectStaged(Endpoint{address: string(addr)}, nil)
			require.NoError(t, err)
			aSrc, _ := stagedMemory(t, a, bufs[0])
			_, aDst := stagedMemory(t, a, bufs[1])
			bSrc, _ := stagedMemory(t, b, bufs[2])
			_, bDst := stagedMemory(t, b, bufs[3])
			for round := uint64(1); round <= 3; round++ {
				for i := range size {
					bufs[0][i], bufs[2][i] = byte(i*7+int(round)), byte(i*11+int(round))
				}
				errc := make(chan error, 2)
				send := func(l link, dst, src RegisteredMemory) {
					err := l.write(dst, 0, src, 0, size)
					if err == nil {
						err = l.writeValue(dst, size, round)
					}
					errc <- err
				}
				go send(ab, bDst, aSrc)
				go send(ba, aDst, bSrc)
				require.NoError(t, <-errc)
				require.NoError(t, <-errc)
				deadline := time.Now().Add(60 * time.Second)
				for atomic.LoadUint64((*uint64)(unsafe.Pointer(&bufs[1][size]))) != round ||
					atomic.LoadUint64((*uint64)(unsafe.Pointer(&bufs[3][size]))) != round {
					require.False(t, time.Now().After(deadline), "round %d's signals never came", round)
					time.Sleep(20 * time.Microsecond)
				}
				wrong := 0
				for i := range size {
					if bufs[3][i] != byte(i*7+int(round)) || bufs[1][i] != byte(i*11+int(round)) {
						wrong++
					}
				}
				assert.Zero(t, wrong, "round %d", round)
			}
		})
	}
}

// FuzzHandleStaged: a staged message is bytes from a peer. Whatever they are, the handler either
// refuses them with ErrRemote, changing nothing, or applies them inside the registered memory
// they name: never a panic, never a byte outside it.
func FuzzHandleStaged(f *testing.F) {
	const key, lo, size = 0x1234, 64, 256
	msg := func(op uint32, k, off, arg uint64, payload []byte) []byte {
		b := make([]byte, stagedHeaderBytes, stagedHeaderBytes+len(payload))
		putStagedHeader(b, op, k, off, arg)
		return append(b, payload...)
	}
	const ringID = 0x5678
	landed := func(id, slot uint64) []byte {
		return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, id), slot)
	}
	hi := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, 0x1000), 7)
	f.Add(msg(stagedLanded, key, 0, 4, landed(ringID, 0)))
	f.Add(msg(stagedLanded, key, size-2, 4, landed(ringID, 1)))
	f.Add(msg(stagedLanded, key, 0, 4, landed(ringID, stagedRingSlots)))
	f.Add(msg(stagedLanded, key, 0, 4, landed(ringID+1, 0)))
	f.Add(msg(stagedLanded, key, 1<<63, 4, landed(ringID, 2)))
	f.Add(msg(stagedLanded, key, 0, stagedChunkBytes+1, landed(ringID, 2)))
	f.Add(msg(stagedValue, key, 8, 42, nil))
	f.Add(msg(stagedValue, key, size-8, 42, nil))
	f.Add(msg(stagedValue, key+1, 0, 42, nil))
	f.Add(msg(stagedHello, ringID, 0, 4, append(hi, "addr"...)))
	f.Add(msg(stagedHello, ringID, 0, 5, append(hi, "addr"...)))
	f.Add(msg(9, key, 0, 0, nil))
	f.Add([]byte("short"))
	ring := make([]byte, stagedRingSlots*stagedChunkBytes) // the landing ring's bytes, a pattern
	for i := range ring {
		ring[i] = byte(i*7 + 1)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= stagedHeaderBytes && binary.LittleEndian.Uint32(b[4:]) == stagedHello {
			// A hello makes a ring and a peer on a real endpoint: its decoding alone here.
			if _, err := decodeHello(binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[24:]), b[stagedHeaderBytes:]); err != nil {
				require.ErrorIs(t, err, errs.ErrRemote)
			}
			return
		}
		mem := make([]byte, 2*lo+size) // the region is mem[lo:lo+size]; the rest must not change
		staging := &hostStaging{mem: [][]byte{mem}}
		var freed []uint64
		n := &fabricNet{transport: TransportSHM, log: logging.Logger(), copier: staging,
			staged: map[uint64]stagedRegion{key: {addr: ptrOf(mem[lo:]), size: size}},
			landings: map[uint64]*landing{ringID: {ring: &hostRing{base: unsafe.Pointer(&ring[0]), size: uint64(len(ring))},
				tell: func(f uint64) error { freed = append(freed, f); return nil }}}}
		_, err := n.handleStaged(b)
		if err != nil {
			require.ErrorIs(t, err, errs.ErrRemote)
			assert.Equal(t, make([]byte, len(mem)), mem, "a refused message changes nothing")
			assert.Equal(t, err, n.rejection())
			return
		}
		assert.Equal(t, make([]byte, lo), mem[:lo], "no byte before the region")
		assert.Equal(t, make([]byte, lo), mem[lo+size:], "no byte after the region")
		if binary.LittleEndian.Uint32(b[4:]) == stagedLanded {
			assert.Equal(t, []uint64{1}, freed, "a landed chunk copied (here at once) gives its slot back")
		}
	})
}

// BenchmarkStagedWrite: one-way bandwidth of the staged path over tcp with host memory standing
// in for the GPU's (so the figure is the messages' and the network's, without the GPU copies):
// a write of b.N x 64 MiB, then a signal, and the wait for it at the receiver.
func BenchmarkStagedWrite(b *testing.B) {
	const size = 64 << 20
	src := testutil.HostMemory(b, size)
	dst := testutil.HostMemory(b, size+8)
	staging := &hostStaging{mem: [][]byte{src, dst}}
	sender, receiver, l := stagedPair(b, TransportIB, "tcp", staging)
	srcMem, _ := stagedMemory(b, sender, src)
	_, dstThere := stagedMemory(b, receiver, dst)
	signal := (*uint64)(unsafe.Pointer(&dst[size]))
	b.SetBytes(size)
	b.ResetTimer()
	for i := range uint64(b.N) {
		require.NoError(b, l.write(dstThere, 0, srcMem, 0, size))
		require.NoError(b, l.writeValue(dstThere, size, i+1))
		for atomic.LoadUint64(signal) != i+1 {
			require.NoError(b, sender.ep.Progress())
		}
	}
}
