package collectives

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/kernels"
)

// TestP2PArgsLayout: 8-byte fields at 8*i, then maxP2PPeers entries of five 8-byte fields, as
// coll::P2PArgs declares them (the C++ side static_asserts the sizes and the entries' offset).
func TestP2PArgsLayout(t *testing.T) {
	var a p2pArgs
	assert.Equal(t, uintptr(p2pArgsBytes), unsafe.Sizeof(a))
	assert.Len(t, a.bytes(), p2pArgsBytes)
	assert.Equal(t, uintptr(64), unsafe.Offsetof(a.Entries))
	check := func(typ reflect.Type, skip string) {
		off := uintptr(0)
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if f.Name == "_" || f.Name == skip {
				continue
			}
			assert.Equal(t, off, f.Offset, f.Name)
			assert.Equal(t, uintptr(8), f.Type.Size(), f.Name)
			off += 8
		}
	}
	check(reflect.TypeOf(a), "Entries")
	check(reflect.TypeOf(p2pEntry{}), "")
	assert.Equal(t, uintptr(40), unsafe.Sizeof(p2pEntry{}))
}

// TestP2PKernelIsInItsModule: the entry point SendRecv launches is in module sendrecv.
func TestP2PKernelIsInItsModule(t *testing.T) {
	mods, err := kernels.Modules()
	require.NoError(t, err)
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	i, ok := moduleFor(p2pKernel, names)
	require.True(t, ok)
	assert.Equal(t, "sendrecv", names[i])
	ptx, err := os.ReadFile(filepath.Join("..", "kernels", "ptx", "sendrecv.ptx"))
	require.NoError(t, err)
	assert.Contains(t, string(ptx), ".entry "+p2pKernel+"(")
}

func TestLaneCount(t *testing.T) {
	for _, tt := range []struct {
		bytes    uint64
		maxLanes int
		lanes    int
	}{
		{0, 32, 0}, {1, 32, 1}, {16 << 10, 32, 1}, {16<<10 + 1, 32, 2}, {64 << 10, 32, 4}, {96 << 10, 32, 6},
		{128 << 10, 32, 8}, {128<<10 + 1, 32, 8}, {512 << 10, 32, 8}, {1 << 20, 32, 8}, {1<<20 + 1, 32, 9},
		{2 << 20, 32, 16}, {2<<20 + 1, 32, 17}, {4 << 20, 32, 32}, {1 << 30, 32, 32},
		{2 << 20, 16, 16}, {2<<20 + 1, 16, 16}, {1 << 30, 16, 16}, {128 << 10, 16, 8},
		{4 << 20, 64, 32}, {8 << 20, 64, 32}, {16 << 20, 64, 32}, {16<<20 + 1, 64, 33}, {32 << 20, 64, 64},
		{1 << 30, 64, 64}, {1 << 20, 64, 8},
	} {
		assert.Equal(t, tt.lanes, laneCount(tt.bytes, tt.maxLanes), "%d bytes, at most %d lanes", tt.bytes, tt.maxLanes)
	}
	// The streams, the in-place counters, the line slots and counters, rounded up.
	assert.Equal(t, uint64(42<<20), p2pScratchBytes(1), "32 MiB + 9 MiB + 1 KiB + 48 bytes")
	assert.Equal(t, uint64(84<<20), p2pScratchBytes(2), "64 MiB + 18 MiB + 2 KiB + 88 bytes")
	assert.Equal(t, uint64(p2pStreamBytes), uint64(32<<20))
}

// TestPlanSendRecvRefusals: what SendRecv refuses before it queues anything (rank 1 of 4).
func TestPlanSendRecvRefusals(t *testing.T) {
	const p = cuda.DevicePtr(0x10000)
	send := func(peer int, buf cuda.DevicePtr, n int, dt DataType) P2POp {
		return P2POp{Peer: peer, Send: true, Buf: buf, Count: n, Type: dt}
	}
	recv := func(peer int, buf cuda.DevicePtr, n int, dt DataType) P2POp {
		return P2POp{Peer: peer, Buf: buf, Count: n, Type: dt}
	}
	many := make([]P2POp, 0, 17)
	for r := range 17 {
		many = append(many, send(r, p, 1, Int8))
	}
	tests := []struct {
		name string
		ops  []P2POp
		want string
	}{
		{"peer too large", []P2POp{send(4, p, 1, Float32)}, "peer out of range"},
		{"negative peer", []P2POp{recv(-1, p, 1, Float32)}, "peer out of range"},
		{"bad type", []P2POp{send(0, p, 1, DataType(12))}, "unsupported data type"},
		{"negative count", []P2POp{recv(0, p, -1, Float32)}, "negative count"},
		{"NULL buffer", []P2POp{send(0, 0, 1, Float32)}, "NULL buffer"},
		{"misaligned", []P2POp{recv(0, p+2, 1, Float32)}, "not aligned"},
		{"two sends to one peer", []P2POp{send(0, p, 1, Float32), recv(0, p, 1, Float32), send(0, p+64, 0, Float32)},
			"a second send to the same peer"},
		{"two receives from one peer", []P2POp{recv(2, p, 1, Float32), recv(2, p+64, 1, Float32)},
			"a second receive from the same peer"},
		{"send to self alone", []P2POp{send(1, p, 4, Float32)}, "needs a receive from it"},
		{"receive from self alone", []P2POp{recv(1, p, 4, Float32), send(0, p, 4, Float32)}, "needs a receive from it"},
		{"self sizes differ", []P2POp{send(1, p, 4, Float32), recv(1, p+64, 3, Float32)}, "receive of 12"},
		{"self buffers overlap", []P2POp{send(1, p, 4, Float32), recv(1, p+4, 4, Float32)}, "overlap"},
		{"too many peers", many, "17 peers in one call"},
	}
	for _, tt := range tests {
		nRanks := 4
		if tt.name == "too many peers" {
			nRanks = 32
		}
		_, _, err := planSendRecv(tt.ops, 1, nRanks)
		require.Error(t, err, tt.name)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
		assert.Equal(t, 1, strings.Count(err.Error(), errs.ErrInvalidArgument.Error()), "%s: %v", tt.name, err)
	}
}

// TestPlanSendRecv: what is accepted, gathered per peer in the order of first appearance, and
// what the launch then holds: zero-byte peers left out, a copy to self counted once.
func TestPlanSendRecv(t *testing.T) {
	const p = cuda.DevicePtr(0x10000)
	tests := []struct {
		name    string
		ops     []P2POp
		order   []int
		entries []p2pEntry
		items   int
	}{
		{"nothing", nil, nil, nil, 0},
		{"ring step", []P2POp{
			{Peer: 2, Send: true, Buf: p, Count: 100, Type: Float32},
			{Peer: 0, Buf: p + 4096, Count: 100, Type: Float32},
		}, []int{2, 0}, []p2pEntry{
			{Peer: 2, Send: uintptr(p), SendBytes: 400},
			{Peer: 0, Recv: uintptr(p + 4096), RecvBytes: 400},
		}, 2},
		{"exchange with one peer, large", []P2POp{
			{Peer: 3, Buf: p, Count: 1 << 20, Type: Float32},
			{Peer: 3, Send: true, Buf: p + 8<<20, Count: 1 << 20, Type: Float32},
		}, []int{3}, []p2pEntry{
			{Peer: 3, Send: uintptr(p + 8<<20), Recv: uintptr(p), SendBytes: 4 << 20, RecvBytes: 4 << 20},
		}, 64},
		{"exchange in place with one peer", []P2POp{
			{Peer: 3, Send: true, Buf: p, Count: 1 << 20, Type: Float32},
			{Peer: 3, Buf: p, Count: 1 << 20, Type: Float32},
		}, []int{3}, []p2pEntry{
			{Peer: 3, Send: uintptr(p), Recv: uintptr(p), SendBytes: 4 << 20, RecvBytes: 4 << 20},
		}, 64},
		{"same buffer, sizes differ", []P2POp{
			{Peer: 3, Send: true, Buf: p, Count: 1 << 20, Type: Float32},
			{Peer: 3, Buf: p, Count: 1 << 19, Type: Float32},
		}, []int{3}, []p2pEntry{
			{Peer: 3, Send: uintptr(p), Recv: uintptr(p), SendBytes: 4 << 20, RecvBytes: 2 << 20},
		}, 32 + 16},
		{"self copy", []P2POp{
			{Peer: 1, Send: true, Buf: p, Count: 3, Type: Float64},
			{Peer: 1, Buf: p + 64, Count: 3, Type: Float64},
		}, []int{1}, []p2pEntry{{Peer: 1, Send: uintptr(p), Recv: uintptr(p + 64), SendBytes: 24, RecvBytes: 24}}, 1},
		{"self copy in place: allowed, nothing to move", []P2POp{
			{Peer: 1, Send: true, Buf: p, Count: 3, Type: Float64},
			{Peer: 1, Buf: p, Count: 3, Type: Float64},
		}, []int{1}, nil, 0},
		{"zero counts match but move nothing", []P2POp{
			{Peer: 0, Send: true, Buf: 0, Count: 0, Type: Int8},
			{Peer: 2, Buf: p + 1, Count: 5, Type: Uint8},
		}, []int{0, 2}, []p2pEntry{{Peer: 2, Recv: uintptr(p + 1), RecvBytes: 5}}, 1},
		{"a type per operation", []P2POp{
			{Peer: 0, Send: true, Buf: p, Count: 3, Type: BFloat16},
			{Peer: 0, Buf: p + 64, Count: 1, Type: Int64},
		}, []int{0}, []p2pEntry{{Peer: 0, Send: uintptr(p), Recv: uintptr(p + 64), SendBytes: 6, RecvBytes: 8}}, 2},
	}
	for _, tt := range tests {
		peers, order, err := planSendRecv(tt.ops, 1, 4)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.order, order, tt.name)
		l := planP2P(p2pArgs{Rank: 1, NRanks: 4}, peers, order, 1, false)
		assert.Equal(t, tt.items, l.items, tt.name)
		require.Equal(t, uint64(len(tt.entries)), l.lanes.NEntries, tt.name)
		for i, e := range tt.entries {
			assert.Equal(t, e, l.lanes.Entries[i], "%s: entry %d", tt.name, i)
		}
		assert.Equal(t, uint64(1), l.lanes.Rank)
		assert.Zero(t, l.lineBytes, "%s: lines off", tt.name)
		assert.Zero(t, l.lines.NEntries, "%s: lines off", tt.name)
	}
}

// TestPlanP2PLines: where lines are on, each transfer of at most p2pLinesMaxBytes goes to the lines
// kernel and the rest to the lanes, by the transfer's own size (so sender and receiver agree),
// a peer's two directions apart when their sizes fall apart.
func TestPlanP2PLines(t *testing.T) {
	const p = cuda.DevicePtr(1 << 20)
	small, big := uint64(p2pLinesMaxBytes), uint64(p2pLinesMaxBytes+16)
	tests := []struct {
		name      string
		ops       []P2POp
		lines     []p2pEntry
		lanes     []p2pEntry
		lineBytes uint64
		items     int
	}{
		{"both directions small", []P2POp{
			{Peer: 0, Send: true, Buf: p, Count: 1024, Type: Int8},
			{Peer: 0, Buf: p + 4096, Count: 256, Type: Float32},
		}, []p2pEntry{{Peer: 0, Send: uintptr(p), Recv: uintptr(p + 4096), SendBytes: 1024, RecvBytes: 1024}}, nil, 1024, 0},
		{"the largest in lines, the next size on lanes", []P2POp{
			{Peer: 2, Send: true, Buf: p, Count: int(small), Type: Int8},
			{Peer: 3, Send: true, Buf: p, Count: int(big), Type: Int8},
		}, []p2pEntry{{Peer: 2, Send: uintptr(p), SendBytes: small}},
			[]p2pEntry{{Peer: 3, Send: uintptr(p), SendBytes: big}}, small, laneCount(big, p2pLanes)},
		{"a peer's directions apart", []P2POp{
			{Peer: 2, Send: true, Buf: p, Count: 32 << 20, Type: Int8},
			{Peer: 2, Buf: p + 64<<20, Count: 512, Type: Int8},
		}, []p2pEntry{{Peer: 2, Send: uintptr(p), Recv: uintptr(p + 64<<20), RecvBytes: 512}},
			[]p2pEntry{{Peer: 2, Send: uintptr(p), Recv: uintptr(p + 64<<20), SendBytes: 32 << 20}}, 512, 64},
		{"in place with a peer: both directions in lines", []P2POp{
			{Peer: 0, Send: true, Buf: p, Count: 64, Type: Float64},
			{Peer: 0, Buf: p, Count: 64, Type: Float64},
		}, []p2pEntry{{Peer: 0, Send: uintptr(p), Recv: uintptr(p), SendBytes: 512, RecvBytes: 512}}, nil, 512, 0},
		{"a small copy to this rank in lines with a peer's transfer", []P2POp{
			{Peer: 1, Send: true, Buf: p, Count: 100, Type: Int8},
			{Peer: 1, Buf: p + 4096, Count: 100, Type: Int8},
			{Peer: 0, Buf: p + 8192, Count: 10, Type: Int8},
		}, []p2pEntry{{Peer: 1, Send: uintptr(p), Recv: uintptr(p + 4096), SendBytes: 100, RecvBytes: 100},
			{Peer: 0, Recv: uintptr(p + 8192), RecvBytes: 10}}, nil, 110, 0},
		{"a small copy to this rank alone on lanes", []P2POp{
			{Peer: 1, Send: true, Buf: p, Count: 100, Type: Int8},
			{Peer: 1, Buf: p + 4096, Count: 100, Type: Int8},
		}, nil, []p2pEntry{{Peer: 1, Send: uintptr(p), Recv: uintptr(p + 4096), SendBytes: 100, RecvBytes: 100}}, 0,
			laneCount(100, p2pLanes)},
		{"a large copy to this rank on lanes", []P2POp{
			{Peer: 1, Send: true, Buf: p, Count: int(big), Type: Int8},
			{Peer: 1, Buf: p + 64<<20, Count: int(big), Type: Int8},
		}, nil, []p2pEntry{{Peer: 1, Send: uintptr(p), Recv: uintptr(p + 64<<20), SendBytes: big, RecvBytes: big}},
			0, laneCount(big, p2pLanes)},
		{"the lines kernel's grid follows the larger direction", []P2POp{
			{Peer: 0, Send: true, Buf: p, Count: 100, Type: Int8},
			{Peer: 2, Send: true, Buf: p, Count: 200, Type: Int8},
			{Peer: 3, Buf: p + 4096, Count: 250, Type: Int8},
		}, []p2pEntry{{Peer: 0, Send: uintptr(p), SendBytes: 100}, {Peer: 2, Send: uintptr(p), SendBytes: 200},
			{Peer: 3, Recv: uintptr(p + 4096), RecvBytes: 250}}, nil, 300, 0},
	}
	for _, tt := range tests {
		peers, order, err := planSendRecv(tt.ops, 1, 4)
		require.NoError(t, err, tt.name)
		l := planP2P(p2pArgs{Rank: 1, NRanks: 4}, peers, order, 1, true)
		assert.Equal(t, tt.lineBytes, l.lineBytes, tt.name)
		assert.Equal(t, tt.items, l.items, tt.name)
		entries := func(a p2pArgs) []p2pEntry {
			if a.NEntries == 0 {
				return nil
			}
			return a.Entries[:a.NEntries]
		}
		assert.Equal(t, tt.lines, entries(l.lines), tt.name)
		assert.Equal(t, tt.lanes, entries(l.lanes), tt.name)
	}
}

// TestAlltoAllPeers: every distance of the ring in one call (the path across hosts) names every
// rank once, sending it its block of send and receiving its block of recv.
func TestAlltoAllPeers(t *testing.T) {
	const send, recv, bytes = cuda.DevicePtr(0x10000), cuda.DevicePtr(0x90000), 96
	for _, n := range []int{1, 2, 5, 17} {
		for r := range n {
			peers, order := alltoAllPeers(ringSteps(r, n, 0, n), send, recv, bytes)
			require.Len(t, order, n, "n=%d rank %d", n, r)
			require.Len(t, peers, n)
			for q, p := range peers {
				off := cuda.DevicePtr(q * bytes)
				assert.Equal(t, p2pPeer{send: send + off, recv: recv + off, sendBytes: bytes, recvBytes: bytes, hasSend: true, hasRecv: true},
					*p, "n=%d rank %d peer %d", n, r, q)
			}
		}
	}
}

// TestP2PCallsRefused: SendRecv and AlltoAll check their arguments before the Comm's state (a
// closed Comm then says ErrClosed; an empty call is a no-op).
func TestP2PCallsRefused(t *testing.T) {
	c := &Comm{rank: 1, nRanks: 2, closed: true}
	const p = cuda.DevicePtr(0x10000)
	err := c.SendRecv([]P2POp{{Peer: 2, Send: true, Buf: p, Count: 1, Type: Float32}}, cuda.Stream{})
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "sendrecv of 1 operations")
	assert.ErrorIs(t, c.SendRecv([]P2POp{{Peer: 0, Buf: p, Count: 1, Type: Float32}}, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.SendRecv(nil, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.AlltoAll(p, p+8, 4, Float32, cuda.Stream{}), errs.ErrInvalidArgument, "overlapping")
	assert.ErrorIs(t, c.AlltoAll(p, p, 4, Float32, cuda.Stream{}), ErrClosed, "in place is allowed")
	assert.ErrorIs(t, c.AlltoAll(p, p+32, 4, Float32, cuda.Stream{}), ErrClosed, "right after send")
	assert.ErrorIs(t, c.AlltoAll(p, p+32, 4, DataType(-1), cuda.Stream{}), errs.ErrInvalidArgument)
	assert.ErrorIs(t, c.AlltoAll(p+1, p+32, 4, Float32, cuda.Stream{}), errs.ErrInvalidArgument, "misaligned")
	assert.NoError(t, c.AlltoAll(0, 0, 0, Float32, cuda.Stream{}), "count 0 is a no-op")
	open := &Comm{rank: 0, nRanks: 2}
	assert.NoError(t, open.SendRecv([]P2POp{{Peer: 1, Send: true, Count: 0, Type: Int8}}, cuda.Stream{}),
		"a zero-count call launches nothing")
}
