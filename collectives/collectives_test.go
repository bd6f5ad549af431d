package collectives

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/kernels"
)

func TestChooseAllReduce(t *testing.T) {
	tests := []struct {
		bytes    uint64
		nRanks   int
		zeroCopy bool
		forced   string
		algo     string
		blocks   int
		threads  int
	}{
		{4, 2, false, AlgoAuto, AlgoPacket, 1, packetGridThreads},
		{128 << 10, 2, false, AlgoAuto, AlgoPacket, maxBlocks, packetGridThreads},
		// ll128 on 2 ranks past 128 KiB, a thread per 16 bytes of lines, up to what a slot holds;
		// then oneshot, a block per 8 KiB, then rsag.
		{128<<10 + 8, 2, false, AlgoAuto, AlgoLL128, 18, packetThreads}, // 1093 lines
		{512 << 10, 2, false, AlgoAuto, AlgoLL128, 69, packetThreads},
		{linesMaxBytes, 2, false, AlgoAuto, AlgoLL128, maxBlocks, packetThreads},
		{linesMaxBytes + 4, 2, false, AlgoAuto, AlgoOneShot, maxBlocks, rsagThreads},
		{8 << 20, 2, false, AlgoAuto, AlgoOneShot, maxBlocks, rsagThreads},
		{8<<20 + 4, 2, false, AlgoAuto, AlgoRSAG, 128, rsagThreads},
		// On 4 ranks, packets to 32 KiB, lines past 32 KiB to 256 KiB, then two-shot packets;
		// on more ranks (not measured) no lines.
		{32 << 10, 4, false, AlgoAuto, AlgoPacket, 32, packetGridThreads},
		{32<<10 + 4, 4, false, AlgoAuto, AlgoLL128, 5, packetThreads},
		{64 << 10, 4, false, AlgoAuto, AlgoLL128, 9, packetThreads},
		{256 << 10, 4, false, AlgoAuto, AlgoLL128, 35, packetThreads},
		{256<<10 + 4, 4, false, AlgoAuto, AlgoPacket2, 65, packetThreads},
		{128<<10 + 4, 8, false, AlgoAuto, AlgoPacket2, 33, packetThreads},
		{1 << 20, 4, false, AlgoAuto, AlgoPacket2, maxBlocks, packetThreads},
		{1<<20 + 4, 4, false, AlgoAuto, AlgoRSAG, 9, rsagThreads},
		{4 << 20, 4, false, AlgoPacket2, AlgoPacket2, maxBlocks, packetThreads},
		{4<<20 + 64, 4, false, AlgoPacket2, AlgoRSAG, 33, rsagThreads}, // a shard beyond a packet slot
		{1 << 30, 2, false, AlgoAuto, AlgoRSAG, maxBlocks, rsagThreads},
		{16 << 20, 4, false, AlgoAuto, AlgoRSAG, 128, rsagThreads},
		{4, 2, false, AlgoRSAG, AlgoRSAG, 1, rsagThreads},
		{2 << 20, 2, false, AlgoRSAG, AlgoRSAG, 32, rsagThreads},
		// oneshot forced: any size; beyond maxZeroCopyPeers + 1 ranks, rsag.
		{4, 8, false, AlgoOneShot, AlgoOneShot, 1, rsagThreads},
		{1 << 30, 8, true, AlgoOneShot, AlgoOneShot, maxBlocks, rsagThreads},
		{2 << 20, maxZeroCopyPeers + 2, false, AlgoOneShot, AlgoRSAG, 1, rsagThreads},
		{packetMaxBytes, 8, false, AlgoPacket, AlgoPacket, maxBlocks, packetThreads},
		{packetMaxBytes + 4, 2, false, AlgoPacket, AlgoRSAG, 17, rsagThreads}, // beyond a packet slot
		{packetMaxBytes + 4, 2, false, AlgoPacket2, AlgoPacket2, 128, packetThreads},
		{4, 8, false, AlgoLL128, AlgoLL128, 1, packetThreads},
		{linesMaxBytes, 4, true, AlgoLL128, AlgoLL128, maxBlocks, packetThreads},
		{linesMaxBytes + 4, 2, false, AlgoLL128, AlgoRSAG, 34, rsagThreads}, // beyond a packet slot
		// Registered buffers: direct above the one-shot limits (packets, lines), or when forced.
		{128 << 10, 2, true, AlgoAuto, AlgoPacket, maxBlocks, packetGridThreads},
		{512<<10 + 4, 2, true, AlgoAuto, AlgoLL128, 69, packetThreads},
		{linesMaxBytes + 4, 2, true, AlgoAuto, AlgoDirect, 34, directThreads},
		{32 << 10, 4, true, AlgoAuto, AlgoPacket, 32, packetGridThreads},
		{128<<10 + 4, 4, true, AlgoAuto, AlgoLL128, 18, packetThreads},
		{256<<10 + 4, 4, true, AlgoAuto, AlgoDirect, 3, directThreads},
		{4 << 20, 4, true, AlgoAuto, AlgoDirect, 32, directThreads},
		{4<<20 + 4, 4, true, AlgoAuto, AlgoRSAGDirect, 33, rsagThreads},
		{8 << 20, 2, true, AlgoAuto, AlgoDirect, maxBlocks, directThreads},
		{8<<20 + 4, 2, true, AlgoAuto, AlgoRSAGDirect, 128, rsagThreads},
		{1 << 30, 4, true, AlgoAuto, AlgoRSAGDirect, maxBlocks, rsagThreads},
		{4, 2, true, AlgoRSAGDirect, AlgoRSAGDirect, 1, rsagThreads},
		{4, 2, false, AlgoRSAGDirect, AlgoPacket, 1, packetGridThreads}, // not registered: auto
		{4, 2, true, AlgoDirect, AlgoDirect, 1, directThreads},
		{4, 2, false, AlgoDirect, AlgoPacket, 1, packetGridThreads},    // not registered: auto
		{2 << 20, 2, false, AlgoDirect, AlgoLL128, 128, packetThreads}, // not registered: auto
		{2 << 20, 2, true, AlgoRSAG, AlgoRSAG, 32, rsagThreads},        // forced scratch algorithms win
		// rsag_port: the reducing blocks plus one; only where the copy engines may run (below).
		{4, 2, true, AlgoRSAGPort, AlgoPacket, 1, packetGridThreads},
	}
	for _, tt := range tests {
		p := chooseAllReduce(tt.bytes, Float16, Sum, tt.nRanks, maxBlocks, true, registered{zeroCopy: tt.zeroCopy}, tt.forced)
		assert.Equal(t, tt.algo, p.algo, "%+v", tt)
		assert.Equal(t, tt.blocks, p.blocks, "%+v", tt)
		assert.Equal(t, tt.threads, p.threads, "%+v", tt)
		assert.Equal(t, "mscclpp_allreduce_"+tt.algo+"_sum_f16", p.kernel)
		assert.Equal(t, tt.algo == AlgoDirect || tt.algo == AlgoRSAGDirect, p.zeroCopy(), "%+v", tt)
		if !tt.zeroCopy {
			assert.False(t, p.zeroCopy(), "a zero-copy kernel for unregistered buffers: %+v", tt)
		}
	}
}

// TestChooseAllReduceCopyEngines: the copy-engine AllReduce kernels run only when forced and their
// registrations allow them, rsag_port when the receive buffer's registration has port channels,
// port when the send buffer's has them too; auto picks neither (rsag_port measured no faster than
// rsag_direct but at 1 GiB on 2 GPUs, port slower). Each has reducing blocks and one issuing
// block.
func TestChooseAllReduceCopyEngines(t *testing.T) {
	recvOnly := registered{zeroCopy: true, copyEngine: true}
	both := registered{zeroCopy: true, copyEngine: true, sendCopyEngine: true}
	tests := []struct {
		bytes  uint64
		nRanks int
		reg    registered
		forced string
		algo   string
		blocks int
	}{
		{4, 2, recvOnly, AlgoRSAGPort, AlgoRSAGPort, 2},
		{1 << 20, 4, recvOnly, AlgoRSAGPort, AlgoRSAGPort, 8 + 1},     // 256 KiB per rank: 8 reducing blocks
		{1 << 30, 4, recvOnly, AlgoRSAGPort, AlgoRSAGPort, maxBlocks}, // 127 reducing blocks
		{1 << 30, 4, registered{zeroCopy: true}, AlgoRSAGPort, AlgoRSAGDirect, maxBlocks},
		{1 << 30, 4, recvOnly, AlgoAuto, AlgoRSAGDirect, maxBlocks},
		{4, 2, both, AlgoPort, AlgoPort, 2},
		{1 << 20, 4, both, AlgoPort, AlgoPort, 8 + 1}, // 256 KiB per rank: 8 reducing blocks
		{1 << 30, 4, both, AlgoPort, AlgoPort, maxBlocks},
		{1 << 30, 4, recvOnly, AlgoPort, AlgoRSAGDirect, maxBlocks},
		{1 << 30, 4, registered{}, AlgoPort, AlgoRSAG, maxBlocks},
		{1 << 30, 4, both, AlgoAuto, AlgoRSAGDirect, maxBlocks},
		{256 << 20, 2, both, AlgoAuto, AlgoPort, maxBlocks},
		{128 << 20, 2, both, AlgoAuto, AlgoRSAGDirect, maxBlocks},
		{1 << 30, 2, recvOnly, AlgoAuto, AlgoRSAGDirect, maxBlocks},
	}
	for _, tt := range tests {
		p := chooseAllReduce(tt.bytes, Float32, Sum, tt.nRanks, maxBlocks, true, tt.reg, tt.forced)
		assert.Equal(t, tt.algo, p.algo, "%+v", tt)
		assert.Equal(t, tt.blocks, p.blocks, "%+v", tt)
		assert.Equal(t, rsagThreads, p.threads, "%+v", tt)
		assert.Equal(t, allReduceKernel(tt.algo, Float32, Sum), p.kernel, "%+v", tt)
		assert.Equal(t, tt.algo != AlgoRSAG, p.zeroCopy(), "%+v", tt)
	}
	p := chooseAllReduce(1<<30, Float32, Sum, 4, 2, true, both, AlgoPort)
	assert.Equal(t, 2, p.blocks, "a reducing block and the issuing one within a grid of 2")
}

func TestPacketGrid(t *testing.T) {
	tests := []struct {
		bytes   uint64
		limit   int
		blocks  int
		threads int
	}{
		{8, maxBlocks, 1, packetGridThreads},
		{1 << 10, maxBlocks, 1, packetGridThreads}, // 128 packets
		{1<<10 + 8, maxBlocks, 1, 2 * packetGridThreads},
		{4 << 10, maxBlocks, 1, packetThreads}, // 512 packets: still one block
		{4<<10 + 8, maxBlocks, 5, packetGridThreads},
		{128 << 10, maxBlocks, maxBlocks, packetGridThreads},
		{128<<10 + 8, maxBlocks, 33, packetThreads}, // beyond limit small blocks: as packetBlocks
		{4<<10 + 8, 4, 2, packetThreads},
	}
	for _, tt := range tests {
		blocks, threads := packetGrid(tt.bytes, tt.limit)
		assert.Equal(t, tt.blocks, blocks, "%+v", tt)
		assert.Equal(t, tt.threads, threads, "%+v", tt)
	}
}

func TestChooseAllGather(t *testing.T) {
	var (
		none   = registered{}
		direct = registered{zeroCopy: true}
		port   = registered{zeroCopy: true, copyEngine: true}
	)
	tests := []struct {
		bytes   uint64
		nRanks  int
		reg     registered
		inPlace bool
		forced  string
		algo    string
		blocks  int
	}{
		{1, 2, none, false, AlgoAuto, AlgoPacket, 1},
		{128 << 10, 2, none, false, AlgoAuto, AlgoPacket, maxBlocks},
		{128<<10 + 8, 2, none, false, AlgoAuto, AlgoLL128, 18}, // 1093 lines of 8 threads
		{512<<10 + 1, 2, none, false, AlgoAuto, AlgoLL128, 69}, // 4370 lines
		{linesMaxBytes, 2, none, false, AlgoAuto, AlgoLL128, maxBlocks},
		{linesMaxBytes + 1, 2, none, false, AlgoAuto, AlgoPut, 68},
		{64 << 10, 4, none, false, AlgoAuto, AlgoPacket, 64}, // a packet per thread: 8192 packets
		{64<<10 + 8, 4, none, false, AlgoAuto, AlgoLL128, 9}, // 547 lines of 8 threads
		{512 << 10, 4, none, false, AlgoAuto, AlgoLL128, 69},
		{512<<10 + 1, 4, none, false, AlgoAuto, AlgoPut, 17},
		{1, 2, none, false, AlgoPut, AlgoPut, 1},
		{packetMaxBytes, 2, none, false, AlgoPacket, AlgoPacket, maxBlocks},
		{packetMaxBytes + 1, 2, none, false, AlgoPacket, AlgoPut, 33},
		{512 << 10, 2, direct, false, AlgoAuto, AlgoLL128, 69},
		{linesMaxBytes + 1, 2, direct, false, AlgoAuto, AlgoDirect, 68},
		{1, 2, none, false, AlgoLL128, AlgoLL128, 1},
		{linesMaxBytes, 2, none, false, AlgoLL128, AlgoLL128, maxBlocks},
		{linesMaxBytes, 8, direct, true, AlgoLL128, AlgoLL128, maxBlocks},
		{linesMaxBytes + 1, 2, none, false, AlgoLL128, AlgoPut, 68}, // beyond a packet slot
		{512<<10 + 1, 4, direct, false, AlgoAuto, AlgoDirect, 17},
		{1, 2, direct, false, AlgoDirect, AlgoDirect, 1},
		{1, 2, none, false, AlgoDirect, AlgoPacket, 1},
		{1 << 30, 2, none, false, AlgoDirect, AlgoPut, maxBlocks},
		{1 << 30, 2, direct, false, AlgoPut, AlgoPut, maxBlocks},
		// The copy engine only where the registration has port channels; in place it takes
		// one block, out of place a block per part of the local copy.
		{1 << 30, 2, direct, false, AlgoPort, AlgoDirect, maxBlocks},
		{1 << 30, 4, none, true, AlgoPort, AlgoPut, maxBlocks},
		{1 << 30, 4, port, true, AlgoPort, AlgoPort, 1},
		{1 << 30, 4, port, false, AlgoPort, AlgoPort, maxBlocks},
		{16 << 20, 4, port, false, AlgoPort, AlgoPort, 4},
		{16<<20 + 1, 4, port, false, AlgoPort, AlgoPort, 5},
		{1, 2, port, false, AlgoPort, AlgoPort, 1},
		// Auto: the copy engines for large in-place calls only.
		{128 << 20, 2, port, true, AlgoAuto, AlgoPort, 1},
		{128<<20 - 16, 2, port, true, AlgoAuto, AlgoDirect, maxBlocks},
		{64 << 20, 4, port, true, AlgoAuto, AlgoPort, 1},
		{1 << 30, 4, port, false, AlgoAuto, AlgoDirect, maxBlocks},
		{1 << 30, 4, direct, true, AlgoAuto, AlgoDirect, maxBlocks},
	}
	for _, tt := range tests {
		p := chooseAllGather(tt.bytes, tt.nRanks, maxBlocks, true, tt.reg, tt.inPlace, tt.forced)
		assert.Equal(t, tt.algo, p.algo, "%+v", tt)
		assert.Equal(t, tt.blocks, p.blocks, "%+v", tt)
		assert.Equal(t, "mscclpp_allgather_"+tt.algo, p.kernel)
		assert.Contains(t, kernelNames(), p.kernel, "the kernel a plan launches is loaded")
		assert.Equal(t, tt.algo == AlgoDirect || tt.algo == AlgoPort, p.zeroCopy(), "%+v", tt)
	}
}

// TestChooseWithinMaxGrid: a GPU with fewer SMs than maxBlocks caps every grid at its SM count,
// and rsag_port keeps its issuing block.
func TestChooseWithinMaxGrid(t *testing.T) {
	ports := registered{zeroCopy: true, copyEngine: true}
	tests := []struct {
		name    string
		maxGrid int
		plan    plan
		blocks  int
	}{
		{"rsag, 114 SMs", 114, chooseAllReduce(1<<30, Float32, Sum, 4, 114, true, registered{}, AlgoAuto), 114},
		{"rsag_direct, 114 SMs", 114, chooseAllReduce(1<<30, Float32, Sum, 4, 114, true, ports, AlgoAuto), 114},
		{"rsag_port, 114 SMs", 114, chooseAllReduce(1<<30, Float32, Sum, 4, 114, true, ports, AlgoRSAGPort), 114},
		{"rsag_port, 2 SMs", 2, chooseAllReduce(1<<30, Float32, Sum, 4, 2, true, ports, AlgoRSAGPort), 2},
		{"ll128, 114 SMs", 114, chooseAllReduce(1<<20, Float32, Sum, 2, 114, true, registered{}, AlgoAuto), 114},
		{"packet, 40 SMs", 40, chooseAllReduce(128<<10, Float32, Sum, 2, 40, true, registered{}, AlgoAuto), 32},
		{"packet, 16 SMs", 16, chooseAllReduce(128<<10, Float32, Sum, 2, 16, true, registered{}, AlgoAuto), 16},
		{"direct, 40 SMs", 40, chooseAllReduce(8<<20, Float32, Sum, 2, 40, true, ports, AlgoAuto), 40},
		{"allgather put, 114 SMs", 114, chooseAllGather(1<<30, 4, 114, true, registered{}, false, AlgoAuto), 114},
		{"allgather put, 40 SMs", 40, chooseAllGather(1<<30, 4, 40, true, registered{}, false, AlgoAuto), 40},
		{"allgather port, 40 SMs", 40, chooseAllGather(1<<30, 4, 40, true, ports, false, AlgoPort), 40},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.blocks, tt.plan.blocks, tt.name)
		assert.LessOrEqual(t, tt.plan.blocks, tt.maxGrid, tt.name)
	}
}

// TestMaxGrid: every rank gets the same limit, maxBlocks or less where a GPU has fewer SMs for
// each rank it runs or a rank asks for less, at least 2, and learns how many ranks share its GPU;
// the identities exchanged over a real TCP bootstrap (exchangeRanks), each rank's host coming
// back as sent. A GPU is named by a letter here (its id), its SM count beside it.
func TestMaxGrid(t *testing.T) {
	gpu := func(id byte, sms int) gpuIdentity { return gpuIdentity{id: uint64(id), sms: sms} }
	a, b, c, d := gpu('a', 132), gpu('b', 132), gpu('c', 114), gpu('d', 100)
	tests := []struct {
		name    string
		gpus    []gpuIdentity
		limits  []int // MSCCLPP_COLL_MAX_BLOCKS per rank; nil: none
		want    int
		sharing []int // per rank
	}{
		{"one rank", []gpuIdentity{a}, nil, maxBlocks, []int{1}},
		{"two GPUs", []gpuIdentity{a, b}, nil, maxBlocks, []int{1, 1}},
		{"a smaller GPU", []gpuIdentity{a, c, b}, nil, 114, []int{1, 1, 1}},
		{"the smallest of four", []gpuIdentity{gpu('a', 108), b, gpu('e', 132), d}, nil, 100, []int{1, 1, 1, 1}},
		{"at least 2", []gpuIdentity{gpu('a', 1), b}, nil, 2, []int{1, 1}},
		{"two ranks on one GPU", []gpuIdentity{a, a}, nil, 66, []int{2, 2}},
		{"eight ranks on one GPU", []gpuIdentity{a, a, a, a, a, a, a, a}, nil, 16, []int{8, 8, 8, 8, 8, 8, 8, 8}},
		{"three on one, one alone", []gpuIdentity{a, b, a, a}, nil, 44, []int{3, 1, 3, 3}},
		{"two pairs", []gpuIdentity{a, d, a, d}, nil, 50, []int{2, 2, 2, 2}},
		{"at least 2 when shared", []gpuIdentity{gpu('a', 3), gpu('a', 3), gpu('a', 3), gpu('a', 3)}, nil, 2, []int{4, 4, 4, 4}},
		{"a limit", []gpuIdentity{a, b}, []int{64, 64}, 64, []int{1, 1}},
		{"the smallest limit, one rank setting none", []gpuIdentity{a, b, c}, []int{0, 40, 96}, 40, []int{1, 1, 1}},
		{"a limit above the SMs", []gpuIdentity{c, b}, []int{120, 120}, 114, []int{1, 1}},
		{"a limit on a shared GPU", []gpuIdentity{a, a, a, a}, []int{16, 16, 16, 16}, 16, []int{4, 4, 4, 4}},
		{"a limit of 1 is 2", []gpuIdentity{a, b}, []int{1, 1}, 2, []int{1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := len(tt.gpus)
			grids, sharing := make([]int, n), make([]int, n)
			failed := runRanks(t, n, func(ctx context.Context, r int, b *bootstrap.TCP) error {
				limit := 0
				if tt.limits != nil {
					limit = tt.limits[r]
				}
				ranks, err := exchangeRanks(ctx, b, rankIdentity{host: uint64(100 + r%2), gpu: tt.gpus[r], limit: limit})
				if err != nil {
					return err
				}
				for q, id := range ranks {
					assert.Equal(t, uint64(100+q%2), id.host, "rank %d's host as rank %d sees it", q, r)
				}
				grids[r], sharing[r] = maxGridOf(ranks, r)
				return nil
			})
			for r := range n {
				require.NoError(t, failed[r], "rank %d", r)
				assert.Equal(t, tt.want, grids[r], "grid of rank %d", r)
			}
			assert.Equal(t, tt.sharing, sharing)
		})
	}
}

// TestLinesSafe: LL128 lines only where every other rank on a rank's host runs on another GPU,
// linked to it (NVLink), ranks on other hosts not counting; every rank gets the AND of all the
// ranks' views, over a real bootstrap (agreeAll).
func TestLinesSafe(t *testing.T) {
	rank := func(host uint64, gpu byte) rankIdentity {
		return rankIdentity{host: host, gpu: gpuIdentity{id: uint64(gpu), sms: 132}}
	}
	linkedTo := func(gpus ...byte) func(uint64) bool {
		return func(g uint64) bool { return slices.Contains(gpus, byte(g)) }
	}
	tests := []struct {
		name   string
		ranks  []rankIdentity
		me     int
		linked func(uint64) bool
		want   bool
	}{
		{"one rank", []rankIdentity{rank(1, 'a')}, 0, linkedTo(), true},
		{"two GPUs, NVLink", []rankIdentity{rank(1, 'a'), rank(1, 'b')}, 0, linkedTo('b'), true},
		{"two GPUs, PCIe or not visible", []rankIdentity{rank(1, 'a'), rank(1, 'b')}, 0, linkedTo(), false},
		{"one GPU shared", []rankIdentity{rank(1, 'a'), rank(1, 'a')}, 1, linkedTo('a'), false},
		{"one of two peers not linked", []rankIdentity{rank(1, 'a'), rank(1, 'b'), rank(1, 'c')}, 0, linkedTo('b'), false},
		{"a peer on another host", []rankIdentity{rank(1, 'a'), rank(2, 'b'), rank(1, 'c')}, 2, linkedTo('a'), true},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, linesSafeAmong(tt.me, tt.ranks, tt.linked), tt.name)
	}
	for _, views := range [][]bool{{true, true, true}, {true, false, true}, {false, false}} {
		got := make([]bool, len(views))
		failed := runRanks(t, len(views), func(ctx context.Context, r int, b *bootstrap.TCP) error {
			var err error
			got[r], err = agreeAll(ctx, b, views[r])
			return err
		})
		for r := range views {
			require.NoError(t, failed[r], "rank %d", r)
			assert.Equal(t, !slices.Contains(views, false), got[r], "views %v, rank %d", views, r)
		}
	}
}

// TestChooseWithoutLines: where a rank reaches a peer without NVLink, auto never sends LL128
// lines (packets, oneshot or put instead), and forcing ll128 still does.
func TestChooseWithoutLines(t *testing.T) {
	tests := []struct {
		bytes         uint64
		nRanks        int
		allReduce, ag string
	}{
		{128<<10 + 8, 2, AlgoPacket, AlgoPacket},
		{1 << 20, 2, AlgoOneShot, AlgoPut},
		{linesMaxBytes, 2, AlgoOneShot, AlgoPut},
		{256 << 10, 4, AlgoPacket2, AlgoPacket},
		{512 << 10, 4, AlgoPacket2, AlgoPut},
	}
	for _, tt := range tests {
		what := fmt.Sprintf("%d bytes, %d ranks", tt.bytes, tt.nRanks)
		assert.Equal(t, tt.allReduce, chooseAllReduce(tt.bytes, Float32, Sum, tt.nRanks, maxBlocks, false, registered{}, AlgoAuto).algo, what)
		assert.Equal(t, tt.ag, chooseAllGather(tt.bytes, tt.nRanks, maxBlocks, false, registered{}, false, AlgoAuto).algo, what)
		assert.Equal(t, AlgoLL128, chooseAllReduce(tt.bytes, Float32, Sum, tt.nRanks, maxBlocks, false, registered{}, AlgoLL128).algo, what)
		assert.Equal(t, AlgoLL128, chooseAllGather(tt.bytes, tt.nRanks, maxBlocks, false, registered{}, false, AlgoLL128).algo, what)
	}
}

// TestScratchLayout: the packet slots hold packetMaxBytes of data as LL16 packets and
// linesMaxBytes as LL128 lines, the descriptor packets and then the data banks start aligned after
// them, chunks are 16-byte multiples, and the allocation's size is a multiple of 2 MiB with less
// than 2 MiB unused.
func TestScratchLayout(t *testing.T) {
	for _, n := range []int{2, 3, 4, 8} {
		l := scratchLayout(n)
		assert.Equal(t, uint64(packetSlotBytes), l.slotBytes)
		assert.LessOrEqual(t, uint64(packetMaxBytes/packetWordBytes*16), l.slotBytes, "LL16 packets fill a slot")
		assert.LessOrEqual(t, uint64((linesMaxBytes+lineDataWords*8-1)/(lineDataWords*8)*lineBytes), l.slotBytes, "LL128 lines fill a slot")
		assert.Zero(t, l.slotBytes%lineBytes, "every line starts 128-byte aligned")
		assert.GreaterOrEqual(t, l.descOffset, 2*packetPhases*uint64(n)*l.slotBytes, "2 parities x 3 phases x ranks slots")
		assert.GreaterOrEqual(t, l.dataOffset, l.descOffset+2*maxBlocks*uint64(n)*descWords*16)
		assert.Zero(t, l.descOffset%256)
		assert.Zero(t, l.dataOffset%256)
		assert.Zero(t, l.chunkBytes%16)
		assert.GreaterOrEqual(t, l.chunkBytes, uint64(minChunkBytes))
		used := l.dataOffset + uint64(4*n*maxBlocks)*l.chunkBytes
		assert.LessOrEqual(t, used, l.total)
		assert.Less(t, l.total-used, uint64(2<<20))
		assert.Zero(t, l.total%(2<<20), "%d ranks: total %d", n, l.total)
	}
}

// TestScratchBytes: the scratch size that doc.go and mscclppCollCommCreate's comment state, about
// 512 MiB plus 13.5 MiB per rank up to 16 ranks (within 2 MiB: the descriptors and the rounding up
// to a multiple of 2 MiB).
func TestScratchBytes(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8, 16} {
		stated := uint64(512<<20) + uint64(n)*(27<<19)
		total := scratchLayout(n).total
		assert.LessOrEqual(t, total, stated+(2<<20), "%d ranks", n)
		assert.GreaterOrEqual(t, total+(1<<20), stated, "%d ranks", n)
	}
}

func TestKernelNamesCoverEveryType(t *testing.T) {
	reducible, sums := 0, map[string]bool{}
	for dt := range dataTypes {
		if dt.Reducible() {
			reducible++
			sums[dataTypes[dt].sumSuffix] = true
		}
	}
	assert.Equal(t, 10, reducible, "every type but fp8")
	assert.Len(t, sums, 7, "unsigned types sum with the signed kernels")
	// Five AllGather, five Broadcast kernels and two AlltoAll kernels; nine AllReduce and two ReduceScatter
	// algorithms, each with an entry point per reducible type and one per distinct sum, and a
	// Scale kernel per reducible type.
	assert.Len(t, kernelNames(), 5+5+2+(9+2)*(reducible+len(sums))+reducible)
}

// TestKernelNames: a reducing kernel's entry point is its algorithm's with, for sum, "sum_" and
// the type's suffix (an unsigned type's sum is its signed twin's), and for the other operators
// the type's suffix alone (kernels/src/common.cuh, COLL_REDUCE_ENTRIES).
func TestKernelNames(t *testing.T) {
	tests := []struct {
		dt           DataType
		sum, any     string // AllReduce rsag entry points: sum, every other operator
		rsSum, rsAny string // ReduceScatter put
	}{
		{Int8, "rsag_sum_i8", "rsag_i8", "put_sum_i8", "put_i8"},
		{Uint8, "rsag_sum_i8", "rsag_u8", "put_sum_i8", "put_u8"},
		{Int32, "rsag_sum_i32", "rsag_i32", "put_sum_i32", "put_i32"},
		{Uint32, "rsag_sum_i32", "rsag_u32", "put_sum_i32", "put_u32"},
		{Int64, "rsag_sum_i64", "rsag_i64", "put_sum_i64", "put_i64"},
		{Uint64, "rsag_sum_i64", "rsag_u64", "put_sum_i64", "put_u64"},
		{Float16, "rsag_sum_f16", "rsag_f16", "put_sum_f16", "put_f16"},
		{BFloat16, "rsag_sum_bf16", "rsag_bf16", "put_sum_bf16", "put_bf16"},
		{Float32, "rsag_sum_f32", "rsag_f32", "put_sum_f32", "put_f32"},
		{Float64, "rsag_sum_f64", "rsag_f64", "put_sum_f64", "put_f64"},
	}
	for _, tt := range tests {
		for op := Sum; op.Valid(); op++ {
			allReduce, reduceScatter := "mscclpp_allreduce_"+tt.any, "mscclpp_reducescatter_"+tt.rsAny
			if op == Sum {
				allReduce, reduceScatter = "mscclpp_allreduce_"+tt.sum, "mscclpp_reducescatter_"+tt.rsSum
			}
			what := tt.dt.String() + " " + op.String()
			assert.Equal(t, allReduce, allReduceKernel(AlgoRSAG, tt.dt, op), what)
			assert.Equal(t, reduceScatter, reduceScatterKernel(AlgoPut, tt.dt, op), what)
			assert.Contains(t, kernelNames(), allReduce, what)
			assert.Contains(t, kernelNames(), reduceScatter, what)
		}
	}
	for _, dt := range []DataType{Float8E4M3, Float8E5M2} {
		for _, k := range kernelNames() {
			assert.NotContains(t, k, "_"+dt.String(), "fp8 has no reducing kernel")
		}
	}
	// The plans launch their operator's entry point.
	allReduce := func(op Op) string {
		return chooseAllReduce(4, Uint32, op, 2, maxBlocks, true, registered{}, AlgoAuto).kernel
	}
	assert.Equal(t, "mscclpp_allreduce_packet_sum_i32", allReduce(Sum))
	assert.Equal(t, "mscclpp_allreduce_packet_u32", allReduce(Avg))
	assert.Equal(t, "mscclpp_reducescatter_put_sum_i64", chooseReduceScatter(1<<30, Uint64, Sum, 4, maxBlocks).kernel)
	assert.Equal(t, "mscclpp_reducescatter_put_u64", chooseReduceScatter(1<<30, Uint64, Max, 4, maxBlocks).kernel)
}

// TestCheckReduction: every operator on every type but fp8; anything else is refused with
// ErrInvalidArgument and a message naming what is wrong.
func TestCheckReduction(t *testing.T) {
	for dt := range dataTypes {
		for _, op := range []Op{Sum, Prod, Max, Min, Avg} {
			err := checkReduction(dt, op)
			if dt == Float8E4M3 || dt == Float8E5M2 {
				assert.ErrorIs(t, err, errs.ErrInvalidArgument, "%s %s", dt, op)
				assert.ErrorContains(t, err, dt.String()+" has no reduction kernel")
			} else {
				assert.NoError(t, err, "%s %s", dt, op)
			}
		}
	}
	tests := []struct {
		op   Op
		want string
	}{
		{Op(5), "unsupported operator Op(5)"},
		{Op(-1), "unsupported operator Op(-1)"},
		{Op(1 << 20), "unsupported operator"},
	}
	for _, tt := range tests {
		err := checkReduction(Float32, tt.op)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, tt.want)
		assert.ErrorContains(t, err, tt.want)
	}
}

func TestCheckCall(t *testing.T) {
	const p = cuda.DevicePtr(0x10000)
	tests := []struct {
		name       string
		send, recv cuda.DevicePtr
		count      int
		dt         DataType
		ok         bool
	}{
		{"fine", p, p, 10, Float32, true},
		{"count 0 with NULL", 0, 0, 0, Float32, true},
		{"bad type", p, p, 1, DataType(12), false},
		{"negative type", p, p, 1, DataType(-1), false},
		{"bytes at any address", p + 1, p + 3, 7, Uint8, true},
		{"fp8 at any address", p + 1, p + 3, 7, Float8E5M2, true},
		{"int64 at 4 bytes", p + 4, p, 1, Int64, false},
		{"negative count", p, p, -1, Float32, false},
		{"NULL send", 0, p, 1, Float32, false},
		{"misaligned", p + 2, p, 1, Float32, false},
		{"half at 2 bytes", p + 2, p + 2, 1, Float16, true},
	}
	for _, tt := range tests {
		err := checkCall(tt.send, tt.recv, tt.count, tt.dt)
		if tt.ok {
			assert.NoError(t, err, tt.name)
		} else {
			assert.ErrorIs(t, err, errs.ErrInvalidArgument, tt.name)
		}
	}
}

func TestOverlap(t *testing.T) {
	assert.True(t, overlap(100, 104, 8, 8))
	assert.False(t, overlap(100, 108, 8, 8))
	assert.False(t, overlap(108, 100, 8, 8))
}

func TestNewRefusesNilCommunicator(t *testing.T) {
	_, err := New(context.Background(), nil, 0)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
}

func TestTypesAndOps(t *testing.T) {
	assert.Equal(t, 2, BFloat16.Size())
	assert.Equal(t, "bfloat16", BFloat16.String())
	assert.Equal(t, "DataType(12)", DataType(12).String())
	tests := []struct {
		dt        DataType
		value     int // NCCL's ncclDataType_t
		name      string
		size      int
		reducible bool
	}{
		{Int8, 0, "int8", 1, true},
		{Uint8, 1, "uint8", 1, true},
		{Int32, 2, "int32", 4, true},
		{Uint32, 3, "uint32", 4, true},
		{Int64, 4, "int64", 8, true},
		{Uint64, 5, "uint64", 8, true},
		{Float16, 6, "float16", 2, true},
		{Float32, 7, "float32", 4, true},
		{Float64, 8, "float64", 8, true},
		{BFloat16, 9, "bfloat16", 2, true},
		{Float8E4M3, 10, "float8e4m3", 1, false},
		{Float8E5M2, 11, "float8e5m2", 1, false},
	}
	assert.Len(t, dataTypes, len(tests))
	for _, tt := range tests {
		assert.Equal(t, tt.value, int(tt.dt), tt.name)
		assert.True(t, tt.dt.Valid(), tt.name)
		assert.Equal(t, tt.name, tt.dt.String())
		assert.Equal(t, tt.size, tt.dt.Size(), tt.name)
		assert.Equal(t, tt.reducible, tt.dt.Reducible(), tt.name)
	}
	ops := []struct {
		op    Op
		value int // NCCL's ncclRedOp_t
		name  string
	}{
		{Sum, 0, "sum"},
		{Prod, 1, "prod"},
		{Max, 2, "max"},
		{Min, 3, "min"},
		{Avg, 4, "avg"},
	}
	for _, tt := range ops {
		assert.Equal(t, tt.value, int(tt.op), tt.name)
		assert.True(t, tt.op.Valid(), tt.name)
		assert.Equal(t, tt.name, tt.op.String())
	}
	assert.False(t, Op(5).Valid(), "ncclNumOps and PreMulSum operators are not supported")
	assert.False(t, Op(-1).Valid())
	assert.Equal(t, "Op(5)", Op(5).String())
}

// TestNewWithoutGPU: on a machine without a usable GPU (CI), New fails with the driver layer's
// error, wrapped with what it was doing, and leaves nothing behind.
func TestNewWithoutGPU(t *testing.T) {
	if n, err := cuda.DeviceCount(); err == nil && n > 0 {
		t.Skip("this machine has a GPU")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	root, err := bootstrap.NewRoot(bootstrap.Options{})
	require.NoError(t, err)
	defer root.Close()
	b, err := bootstrap.Join(ctx, root.ID(), 0, 1, bootstrap.Options{})
	require.NoError(t, err)
	defer b.Close()
	cctx := core.NewContext()
	defer cctx.Close()

	c, err := New(ctx, core.NewCommunicator(b, cctx), 0)
	require.Error(t, err)
	assert.Nil(t, c)
	assert.True(t, errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrDriverNotFound), "%v", err)
	assert.Contains(t, err.Error(), "new collective communicator (rank 0 of 1, GPU 0)")
}

// TestCallsOnAClosedComm: a closed Comm refuses calls with ErrClosed (after the argument checks).
func TestCallsOnAClosedComm(t *testing.T) {
	c := &Comm{nRanks: 2, closed: true}
	const p = cuda.DevicePtr(0x10000)
	err := c.AllReduce(p, p, 4, Float32, Sum, cuda.Stream{})
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, err, errs.ErrInvalidUsage)
	assert.ErrorIs(t, c.AllGather(p, p, 4, Float32, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.AllGather(p, p, 3, Uint8, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.ReduceScatter(p, p, 4, Float32, Sum, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.Broadcast(p, p, 4, Float32, 1, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.Broadcast(p, p, 5, Int8, 0, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.AllReduce(p, p, 4, Float32, Op(5), cuda.Stream{}), errs.ErrInvalidArgument)
	assert.ErrorIs(t, c.AllReduce(p, p, 4, Int8, Prod, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.AllReduce(p, p, 4, Uint64, Avg, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.ReduceScatter(p, p, 4, Uint8, Avg, cuda.Stream{}), ErrClosed)
	assert.ErrorIs(t, c.ReduceScatter(p, p, 4, Int64, Prod, cuda.Stream{}), ErrClosed)
	assert.NoError(t, c.AllReduce(0, 0, 0, Float32, Sum, cuda.Stream{}), "count 0 is a no-op")
	assert.NoError(t, c.ReduceScatter(0, 0, 0, Float32, Sum, cuda.Stream{}), "count 0 is a no-op")
	assert.NoError(t, c.Broadcast(0, 0, 0, Float32, 0, cuda.Stream{}), "count 0 is a no-op")
	assert.ErrorIs(t, c.Close(), ErrClosed)
}

// TestEveryKernelIsInItsModule: each entry point a call may launch is found in exactly the
// embedded module that declares it (no GPU needed: the module's committed PTX is text, whatever
// form the build embeds).
func TestEveryKernelIsInItsModule(t *testing.T) {
	mods, err := kernels.Modules()
	require.NoError(t, err)
	names := make([]string, len(mods))
	for i, m := range mods {
		names[i] = m.Name
	}
	for _, k := range kernelNames() {
		i, ok := moduleFor(k, names)
		require.True(t, ok, k)
		ptx, err := os.ReadFile(filepath.Join("..", "kernels", "ptx", names[i]+".ptx"))
		require.NoError(t, err)
		assert.Contains(t, string(ptx), ".entry "+k+"(", "%s should be in module %s", k, names[i])
	}
	_, ok := moduleFor("mscclpp_allreduce_nothing_f32", names)
	assert.False(t, ok)
}

// TestModuleForLongestPrefix: a kernel belongs to the module of the longest name that prefixes
// it, whatever the modules' order.
func TestModuleForLongestPrefix(t *testing.T) {
	for _, names := range [][]string{
		{"allreduce_rsag", "allreduce_rsag_port", "allgather_port"},
		{"allreduce_rsag_port", "allreduce_rsag", "allgather_port"},
	} {
		tests := map[string]string{
			"mscclpp_allreduce_rsag_f32":        "allreduce_rsag",
			"mscclpp_allreduce_rsag_direct_f32": "allreduce_rsag",
			"mscclpp_allreduce_rsag_port_f32":   "allreduce_rsag_port",
			"mscclpp_allgather_port":            "allgather_port",
		}
		for kernel, want := range tests {
			i, ok := moduleFor(kernel, names)
			require.True(t, ok, kernel)
			assert.Equal(t, want, names[i], "%s in %v", kernel, names)
		}
	}
}

// TestCallRefusals: what each collective refuses before it queues anything, with
// ErrInvalidArgument and a message that names the problem (rank 1 of 2, checked before the
// Comm's state, which is empty here).
func TestCallRefusals(t *testing.T) {
	c := &Comm{rank: 1, nRanks: 2}
	const p = cuda.DevicePtr(0x10000)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"allreduce of fp8", func() error { return c.AllReduce(p, p, 4, Float8E4M3, Sum, cuda.Stream{}) },
			"float8e4m3 has no reduction kernel"},
		{"allreduce of fp8, avg", func() error { return c.AllReduce(p, p, 4, Float8E5M2, Avg, cuda.Stream{}) },
			"float8e5m2 has no reduction kernel"},
		{"reducescatter of fp8", func() error { return c.ReduceScatter(p, p+2, 1, Float8E4M3, Prod, cuda.Stream{}) },
			"float8e4m3 has no reduction kernel"},
		{"allreduce, bad op", func() error { return c.AllReduce(p, p, 4, Int64, Op(5), cuda.Stream{}) },
			"unsupported operator"},
		{"reducescatter, bad op", func() error { return c.ReduceScatter(p, p+8, 2, Float32, Op(7), cuda.Stream{}) },
			"unsupported operator"},
		{"allreduce of int64, misaligned", func() error { return c.AllReduce(p+4, p+4, 4, Int64, Sum, cuda.Stream{}) },
			"not aligned"},
		{"reducescatter, bad type", func() error { return c.ReduceScatter(p, p+8, 2, DataType(12), Sum, cuda.Stream{}) },
			"unsupported data type"},
		// Rank 1's block of a 2 x 4 float32 input is at p+16.
		{"reducescatter, recv overlaps another block", func() error {
			return c.ReduceScatter(p, p+4, 4, Float32, Sum, cuda.Stream{})
		}, "overlaps the send buffer"},
		{"reducescatter, recv is rank 0's block", func() error {
			return c.ReduceScatter(p, p, 4, Float32, Sum, cuda.Stream{})
		}, "overlaps the send buffer"},
		{"reducescatter, NULL send", func() error { return c.ReduceScatter(0, p, 4, Float32, Sum, cuda.Stream{}) },
			"NULL buffer"},
		{"broadcast, root too large", func() error { return c.Broadcast(p, p, 4, Float32, 2, cuda.Stream{}) },
			"root out of range"},
		{"broadcast, negative root", func() error { return c.Broadcast(p, p, 4, Float32, -1, cuda.Stream{}) },
			"root out of range"},
		{"broadcast, NULL recv", func() error { return c.Broadcast(p, 0, 4, Float32, 0, cuda.Stream{}) },
			"NULL buffer"},
		{"broadcast, misaligned", func() error { return c.Broadcast(p, p+2, 4, Float32, 0, cuda.Stream{}) },
			"not aligned"},
		{"broadcast, bad type", func() error { return c.Broadcast(p, p, 4, DataType(-1), 0, cuda.Stream{}) },
			"unsupported data type"},
	}
	for _, tt := range tests {
		err := tt.call()
		require.Error(t, err, tt.name)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, tt.name)
		assert.Contains(t, err.Error(), tt.want, tt.name)
	}
}

// TestCallsAccepted: what the checks let through reaches the launch, which fails on a Comm
// without state (closed here, so that nothing is launched): the root's send is checked, a
// non-root's is ignored, a ReduceScatter in place is recv at this rank's block.
func TestCallsAccepted(t *testing.T) {
	c := &Comm{rank: 1, nRanks: 2, closed: true}
	const p = cuda.DevicePtr(0x10000)
	assert.ErrorIs(t, c.Broadcast(0, p, 4, Float32, 0, cuda.Stream{}), ErrClosed, "a non-root's send is not read")
	assert.ErrorIs(t, c.Broadcast(p+1, p, 4, Float32, 0, cuda.Stream{}), ErrClosed, "a non-root's send is not read")
	assert.ErrorIs(t, c.Broadcast(0, p, 4, Float32, 1, cuda.Stream{}), errs.ErrInvalidArgument, "the root's is")
	assert.ErrorIs(t, c.Broadcast(p, p+4, 4, Float32, 1, cuda.Stream{}), errs.ErrInvalidArgument, "overlapping")
	assert.ErrorIs(t, c.ReduceScatter(p, p+16, 4, Float32, Sum, cuda.Stream{}), ErrClosed, "in place")
	assert.ErrorIs(t, c.ReduceScatter(p, p+32, 4, Float32, Sum, cuda.Stream{}), ErrClosed, "right after send")
	assert.ErrorIs(t, c.ReduceScatter(p+1, p+10, 3, Uint32, Sum, cuda.Stream{}), errs.ErrInvalidArgument, "misaligned")
	assert.ErrorIs(t, c.AllGather(p+1, p+7, 3, Int8, cuda.Stream{}), ErrClosed, "bytes at any address")
}

// TestChooseReduceScatterAndBroadcast: packets up to AllGather's packet limit (bytes per rank
// for ReduceScatter, the message for Broadcast), then ReduceScatter's rounds, Broadcast's put on
// 2 ranks, sag on 3 to maxZeroCopyPeers + 1 and ring on 3 or more from ringBroadcastMinBytes;
// never zero-copy.
func TestChooseReduceScatterAndBroadcast(t *testing.T) {
	rs := func(bytes uint64, nRanks int) plan {
		return chooseReduceScatter(bytes, BFloat16, Sum, nRanks, maxBlocks)
	}
	bc := func(bytes uint64, nRanks int) plan { return chooseBroadcast(bytes, nRanks, maxBlocks, false, AlgoAuto) }
	bcLines := func(bytes uint64, nRanks int) plan { return chooseBroadcast(bytes, nRanks, maxBlocks, true, AlgoAuto) }
	tests := []struct {
		choose  func(bytes uint64, nRanks int) plan
		bytes   uint64
		nRanks  int
		kernel  string
		blocks  int
		threads int
	}{
		{rs, 4, 2, "mscclpp_reducescatter_packet_sum_bf16", 1, packetThreads},
		{rs, 512 << 10, 2, "mscclpp_reducescatter_packet_sum_bf16", maxBlocks, packetThreads},
		{rs, 64 << 10, 4, "mscclpp_reducescatter_packet_sum_bf16", 64, packetThreads}, // 256 KiB of input: 32768 packets
		{rs, 256 << 10, 4, "mscclpp_reducescatter_packet_sum_bf16", maxBlocks, packetThreads},
		{rs, 512<<10 + 4, 2, "mscclpp_reducescatter_put_sum_bf16", 17, rsagThreads},
		{rs, 256<<10 + 4, 4, "mscclpp_reducescatter_put_sum_bf16", 9, rsagThreads},
		{rs, 1 << 30, 8, "mscclpp_reducescatter_put_sum_bf16", maxBlocks, rsagThreads},
		{bc, 1, 2, "mscclpp_broadcast_packet", 1, packetThreads},
		{bc, 512 << 10, 2, "mscclpp_broadcast_packet", maxBlocks, packetThreads},
		{bc, 256 << 10, 4, "mscclpp_broadcast_packet", 64, packetThreads},
		{bc, 512<<10 + 1, 2, "mscclpp_broadcast_put", 17, putThreads},
		{bc, 1 << 30, 2, "mscclpp_broadcast_put", maxBlocks, putThreads},
		{bc, 256<<10 + 1, 3, "mscclpp_broadcast_sag", 9, putThreads},
		{bc, 256<<10 + 1, 4, "mscclpp_broadcast_sag", 9, putThreads},
		{bc, ringBroadcastMinBytes - 1, 8, "mscclpp_broadcast_sag", maxBlocks, putThreads},
		{bc, ringBroadcastMinBytes - 1, maxZeroCopyPeers + 1, "mscclpp_broadcast_sag", maxBlocks, putThreads},
		{bc, ringBroadcastMinBytes - 1, maxZeroCopyPeers + 2, "mscclpp_broadcast_put", maxBlocks, putThreads}, // the receivers would not fit
		{bc, ringBroadcastMinBytes, 3, "mscclpp_broadcast_ring", maxBlocks, putThreads},
		{bc, 1 << 30, 8, "mscclpp_broadcast_ring", maxBlocks, putThreads},
		{bc, 1 << 30, maxZeroCopyPeers + 2, "mscclpp_broadcast_ring", maxBlocks, putThreads},
		{bc, 1 << 30, 2, "mscclpp_broadcast_put", maxBlocks, putThreads},
		{bcLines, broadcastLL128MinBytes, 4, "mscclpp_broadcast_packet", 16, packetThreads},
		{bcLines, broadcastLL128MinBytes + 1, 4, "mscclpp_broadcast_ll128", 9, packetThreads}, // 547 lines of 8 threads
		{bcLines, 256 << 10, 4, "mscclpp_broadcast_ll128", 35, packetThreads},                 // 2185 lines
		{bcLines, ringBroadcastMinBytes - 1, 4, "mscclpp_broadcast_ll128", maxBlocks, packetThreads},
		{bcLines, ringBroadcastMinBytes - 1, 8, "mscclpp_broadcast_ll128", maxBlocks, packetThreads},
		{bcLines, ringBroadcastMinBytes, 4, "mscclpp_broadcast_ring", maxBlocks, putThreads},
		{bcLines, 1 << 20, 2, "mscclpp_broadcast_put", 32, putThreads}, // a chain of two is put
		{bcLines, 1 << 30, 4, "mscclpp_broadcast_ring", maxBlocks, putThreads},
	}
	for _, tt := range tests {
		p := tt.choose(tt.bytes, tt.nRanks)
		what := fmt.Sprintf("%s, %d bytes, %d ranks", tt.kernel, tt.bytes, tt.nRanks)
		assert.Equal(t, tt.kernel, p.kernel, what)
		assert.Contains(t, p.kernel, "_"+p.algo, what)
		assert.Equal(t, tt.blocks, p.blocks, what)
		assert.Equal(t, tt.threads, p.threads, what)
		assert.False(t, p.zeroCopy(), what)
		if p.algo == AlgoPacket {
			assert.LessOrEqual(t, tt.bytes, uint64(packetMaxBytes), "a packet slot holds what a rank sends a peer")
		}
	}
	assert.Equal(t, 40, chooseReduceScatter(1<<30, Float32, Sum, 4, 40).blocks)
	assert.Equal(t, 40, chooseBroadcast(1<<30, 4, 40, true, AlgoAuto).blocks)
}

// TestChooseAlltoAll: lines where they are on, a block fits a line slot and the lines to all peers
// fit alltoAllLinesMaxTotalBytes, a grid of a thread per 15 bytes sent; else the put rounds, a
// block per 32 KiB of a block; one rank: no collective kernel (a copy on the p2p lanes).
func TestChooseAlltoAll(t *testing.T) {
	lines := func(blocks int) plan { return plan{AlgoLL128, alltoAllLinesKernel, blocks, packetThreads} }
	put := func(blocks int) plan { return plan{AlgoPut, alltoAllPutKernel, blocks, putThreads} }
	tests := []struct {
		bytes  uint64
		nRanks int
		lines  bool
		ok     bool
		plan   plan
	}{
		{8, 4, true, true, lines(1)},
		{64 << 10, 2, true, true, lines(9)},  // 547 lines of 8 threads: 4376 threads
		{64 << 10, 4, true, true, lines(26)}, // three peers' lines: 13128 threads
		{alltoAllLL128MaxBytes, 2, true, true, lines(maxBlocks)},
		{alltoAllLL128MaxBytes + 1, 2, true, true, put(68)}, // a block per 32 KiB
		{alltoAllLinesMaxTotalBytes / 3, 4, true, true, lines(maxBlocks)},
		{alltoAllLinesMaxTotalBytes/3 + 1, 4, true, true, put(43)}, // 4 MiB of lines to three peers: put
		{alltoAllLinesMaxTotalBytes / 7, 8, true, true, lines(maxBlocks)},
		{8, 4, false, true, put(1)},
		{1 << 20, 2, false, true, put(32)}, // a block per 32 KiB of a rank's block
		{1 << 30, 64, true, true, put(maxBlocks)},
		{8, 1, true, false, plan{}},
		{1 << 30, 1, false, false, plan{}},
	}
	for _, tt := range tests {
		p, ok := chooseAlltoAll(tt.bytes, tt.nRanks, maxBlocks, tt.lines)
		what := fmt.Sprintf("%d bytes, %d ranks, lines %v", tt.bytes, tt.nRanks, tt.lines)
		require.Equal(t, tt.ok, ok, what)
		assert.Equal(t, tt.plan, p, what)
	}
}

// TestChooseBroadcastForced: MSCCLPP_BROADCAST_ALGO's choice where the call allows it, auto's
// where it does not.
func TestChooseBroadcastForced(t *testing.T) {
	tests := []struct {
		forced string
		bytes  uint64
		nRanks int
		algo   string
	}{
		{AlgoRing, 1 << 30, 4, AlgoRing},
		{AlgoRing, 1 << 30, maxZeroCopyPeers + 2, AlgoRing},
		{AlgoRing, 1 << 30, 2, AlgoPut}, // a chain of two is put
		{AlgoRing, 1, 4, AlgoRing},
		{AlgoSAG, 1 << 30, 2, AlgoPut},
		{AlgoSAG, 1 << 30, maxZeroCopyPeers + 2, AlgoRing}, // auto
		{AlgoSAG, 1, 3, AlgoSAG},
		{AlgoPut, 1 << 30, 4, AlgoPut},
		{AlgoPacket, packetMaxBytes, 4, AlgoPacket},
		{AlgoPacket, packetMaxBytes + 1, 4, AlgoSAG},
		{AlgoSAG, 1 << 30, 4, AlgoSAG},
		{AlgoAuto, 64 << 20, 4, AlgoSAG},
		{AlgoAuto, 1 << 30, 4, AlgoRing},
		{AlgoLL128, 1, 3, AlgoLL128},
		{AlgoLL128, 1 << 30, 4, AlgoLL128},
		{AlgoLL128, 1 << 20, 2, AlgoLL128}, // a chain of two: the root's lines to the other rank
		{AlgoLL128, 1 << 20, 1, AlgoPut},   // no chain (one rank: a copy, never launched)
	}
	for _, tt := range tests {
		p := chooseBroadcast(tt.bytes, tt.nRanks, maxBlocks, false, tt.forced)
		what := fmt.Sprintf("%s forced, %d bytes, %d ranks", tt.forced, tt.bytes, tt.nRanks)
		assert.Equal(t, tt.algo, p.algo, what)
		assert.Equal(t, broadcastKernel(tt.algo), p.kernel, what)
	}
}

// runRanks runs f as n ranks of one in-process bootstrap job (real sockets), each in its own
// goroutine with its own bootstrap, and returns each rank's error (a failed join included). The
// job has 20 seconds.
func runRanks(t *testing.T, n int, f func(ctx context.Context, r int, b *bootstrap.TCP) error) []error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	root, err := bootstrap.NewRoot(bootstrap.Options{})
	require.NoError(t, err)
	defer root.Close()
	failed := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			b, err := bootstrap.Join(ctx, root.ID(), r, n, bootstrap.Options{})
			if err != nil {
				failed[r] = err
				return
			}
			defer b.Close()
			failed[r] = f(ctx, r, b)
		})
	}
	wg.Wait()
	return failed
}
