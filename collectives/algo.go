package collectives

import (
	"math"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// Algorithm names, as MSCCLPP_ALLREDUCE_ALGO, MSCCLPP_ALLGATHER_ALGO and MSCCLPP_BROADCAST_ALGO
// spell them.
const (
	AlgoAuto    = "auto"
	AlgoPacket  = "packet"  // one-shot LL packets (every collective)
	AlgoPacket2 = "packet2" // two-shot LL packets: reduce-scatter and all-gather (AllReduce)
	AlgoLL128   = "ll128"   // LL128 lines: 120 data bytes and a flag per 128 (one-shot AllReduce, AllGather, AlltoAll; Broadcast a chain)
	AlgoRSAG    = "rsag"    // reduce-scatter + all-gather rounds (AllReduce)
	// AlgoOneShot is every rank's whole input copied into every peer's scratch, one signal
	// exchange per round, and every rank reducing all of them (AllReduce; at most
	// maxZeroCopyPeers + 1 ranks).
	AlgoOneShot = "oneshot"
	// AlgoPut is copies into the peers' scratch and a signal per round (AllGather, Broadcast;
	// ReduceScatter: rsag's reduce-scatter rounds).
	AlgoPut    = "put"
	AlgoSAG    = "sag"    // scatter from the root, then all-gather among the others, in rounds (Broadcast)
	AlgoRing   = "ring"   // a chain from the root, each rank storing to the next, in rounds (Broadcast)
	AlgoDirect = "direct" // zero-copy, straight between registered user buffers (AllReduce and AllGather)
	// AlgoPort is zero-copy through port channels: the copy engines move all the data between
	// the ranks (AllGather: between the registered receive buffers; AllReduce: the inputs into
	// the peers' scratch and the reduced shards into the peers' registered receive buffers, the
	// SMs only reducing locally).
	AlgoPort = "port"
	// AlgoRSAGDirect is rsag whose all-gather writes straight into registered receive buffers
	// (AllReduce).
	AlgoRSAGDirect = "rsag_direct"
	// AlgoRSAGPort is rsag whose all-gather runs on the copy engines, between registered receive
	// buffers, overlapped with the reduce-scatter of the next wave (AllReduce; forced only: with
	// 128 blocks it beat rsag_direct only at 1 GiB on 2 GPUs, by 2 %, and not on 4).
	AlgoRSAGPort = "rsag_port"
)

// Launch shapes and limits. maxBlocks must equal coll::kMaxBlocks of kernels/src/common.cuh.
const (
	// maxBlocks is the largest grid: the per-block state, semaphores, channels and scratch slots
	// are sized by it. A call's grid is also at most the ranks' smallest SM count (Comm.maxGrid):
	// the blocks of a call wait on each other, so they must all be resident at once. Every kernel
	// takes up to maxBlocks (docs/PERFORMANCE.md, "128 blocks").
	maxBlocks     = 128
	packetThreads = 512 // coll::kPacketThreads: the largest block of the packet and line kernels
	// packetGridThreads: the packet AllReduce and AllGather run blocks of this many threads
	// when their packets need more than one block (packetGrid).
	packetGridThreads = 128
	rsagThreads       = 512         // coll::kRsagThreads
	putThreads        = 1024        // coll::kPutThreads
	directThreads     = rsagThreads // AllReduce direct; AllGather direct uses putThreads
	packetWordBytes   = 8           // data bytes per LL16 packet
	packetPhases      = 3           // coll::kPacketPhases: LL16 reduce and gather slots, LL128 line slots
	lineBytes         = 128         // coll::kLineBytes: one LL128 line
	lineDataWords     = 15          // coll::kLineDataWords: 8-byte data words per line
	lineLanes         = 8           // coll::kLineLanes: threads per line

	// packetMaxBytes is the most data one rank's packet slot carries as LL16 packets (twice as
	// many packet bytes): the ceiling of the packet algorithms, forced or not.
	packetMaxBytes = 1 << 20
	// packetSlotBytes is one rank's packet slot: packetMaxBytes as LL16 packets (2 MiB), and a
	// 2 MiB AllReduce as LL128 lines (2.13 MiB).
	packetSlotBytes = 9 << 18
	// linesMaxBytes is the most data one rank's packet slot carries as LL128 lines (2.11 MiB).
	linesMaxBytes = packetSlotBytes / lineBytes * lineDataWords * 8
	// roundBytesPerBlock: the round algorithms give each block at least this much data before
	// adding blocks.
	roundBytesPerBlock = 32 << 10
	// oneShotBytesPerBlock: oneshot gives each block at least this much of the buffer: every
	// block from 1 MiB (2 x H200, 2 MiB: 12.9-13.0 us against 13.3-13.4 with 32 KiB per block,
	// 1 MiB 9.5 against 10.4).
	oneShotBytesPerBlock = 8 << 10
	// ringBroadcastMinBytes: auto's Broadcast on 3 or more ranks is the chain in rounds (ring)
	// from this size; below, LL128 lines where the GPUs are joined by NVLink, else sag (4 x H200,
	// graph, four slots per block: ring 256 MiB 810-821 us and 1 GiB 3017-3044 against sag's
	// 878-885 and 3557-3610 (two slots: 839-847, 3086-3100), NCCL 762-766 and 2973-2986; lines
	// at 128 MiB 410-413 against ring's 452-458).
	ringBroadcastMinBytes = 256 << 20
	// broadcastLL128MinBytes: auto's Broadcast on 3 or more ranks joined by NVLink sends LL128
	// lines above this size and below ringBroadcastMinBytes (4 x H200, graph, us, lines / packets
	// or sag / NCCL: 64 KiB 5.15-5.42 / 5.30-5.44 / 7.8, 128 KiB 5.34-5.41 / 6.32-6.48 / 7.9,
	// 256 KiB 5.54-5.65 / 8.46-8.62 / 8.0, 1 MiB 8.64-9.30 / sag 14.3 / 12.4, 8 MiB 30.2-31.1 /
	// 46.8-50.3 / 41.2, 16 MiB 56.4-56.7 / 87.1 / 70, 32 MiB 108 / 142 / 118, 64 MiB 208 / 242 /
	// 210, 128 MiB 410-418 / 455 (ring 454-462) / 394-401; at 256 MiB the ring is as fast or
	// faster, 811-821 against 815-834; nothing measured between 128 and 256 MiB).
	broadcastLL128MinBytes = 64 << 10
	// alltoAllLL128MaxBytes: AlltoAll sends LL128 lines up to this many bytes per block (the most
	// a line slot holds), where lines are on (graph, us, bytes per rank, lines / p2p lanes / NCCL;
	// 4 x H200: 1 KiB 5.1-5.2 / 9.2-9.3 / 6.6-7.4, 256 KiB 5.7 / 12.4 / 8.5, 1 MiB 7.8-8.1 /
	// 17.9-18.0 / 13.9-14.8, 4 MiB 19.2-20.1 / 25.8-26.1 / 22.7-23.0; 2 x H200: 1 KiB 3.2 / 7.9 /
	// 6.3, 1 MiB 5.1 / 13.1 / 12.8, 4 MiB 10.7 / 21.2 / 19.4).
	alltoAllLL128MaxBytes = linesMaxBytes
	// alltoAllLinesMaxTotalBytes: and only while a rank's lines to all its peers, the block
	// times nRanks - 1, are at most this many bytes; past it the put rounds are faster (graph, us,
	// bytes per rank, lines / put / NCCL; 4 x H200, 3 MiB of lines: 4 MiB 19.2-20.4 / 18.7-20.1 /
	// 22.7-23.3; 6 MiB: 8 MiB 33.6-35.1 / 27.2-28.5 / 34.7-39.6; 2 x H200, 2 MiB of lines: 4 MiB
	// 10.0-10.8 / 12.9-13.5 / 19.1-20.2).
	alltoAllLinesMaxTotalBytes = 4 << 20
	// dataBankBytes sizes the data banks of the scratch (4 x nRanks x maxBlocks slots); the
	// slot (chunk) size follows from it and the rank count: 512 KiB on 2 ranks, 256 KiB on 4.
	dataBankBytes = 512 << 20
	minChunkBytes = 64 << 10
	// portPartBytes: an out-of-place port AllGather gives each block (and copy request) at
	// least this much; the proxy takes microseconds per request, so smaller copies would wait on it.
	portPartBytes = 4 << 20
)

// Default crossovers (bytes of the whole AllReduce buffer; bytes per rank for AllGather),
// measured on H200s over NVLink (docs/PERFORMANCE.md).
//
// allReducePacketLimit: on 2 ranks, one-shot packets to 512 KiB, then oneshot (unregistered
// buffers) or direct (registered); 128 KiB on more ranks.
func allReducePacketLimit(nRanks int) uint64 {
	if nRanks <= 2 {
		return 512 << 10
	}
	return 128 << 10
}

// allReduceOneShotLimit: on 2 ranks with unregistered buffers, oneshot from the packet limit to
// here, then rsag. 2 x H200, graph mode, same runs (2026-11-27): 512 KiB packet 6.6 us, oneshot
// 7.6; 1 MiB packet 10.2, oneshot 9.5; 2 MiB oneshot 12.9-13.0, rsag 16.1; 8 MiB oneshot 33.2,
// rsag 34.7; 16 MiB oneshot 61-64, rsag 58. On more ranks each rank sends its whole buffer to
// every peer: not picked (4 x H200, forced: 1 MiB 20.0 us against auto's 16.7, 8 MiB 110 against
// 50; 2026-11-27).
func allReduceOneShotLimit(nRanks int) uint64 {
	if nRanks <= 2 {
		return 8 << 20
	}
	return 0
}

// allReduceLL128Range: an AllReduce of more than `from` and at most `to` bytes sends LL128
// lines, one-shot, whether or not the buffers are registered. 2 x H200, graph mode, same run
// (2026-11-27, us, ll128 / packet / oneshot): 128 KiB 4.39 / 4.30 / 6.29, 256 KiB 4.79 / 5.02 /
// 6.76, 512 KiB 5.50 / 6.55 / 7.53, 1 MiB 7.58 / 10.13 / 9.29, 2 MiB 10.74 / 16.10 / 12.66;
// registered, `direct` took 11.04, 12.94 and 14.96 at 512 KiB, 1 MiB and 2 MiB. 4 x H200, same
// runs (2026-11-27, ll128 / packet / packet2): 32 KiB 4.22 / 3.71, 64 KiB 4.30 / 4.57, 128 KiB
// 4.78 / 6.10 / 6.72, 256 KiB 6.26 / 9.15 / 7.58, 512 KiB 9.93 / 16.77 / 9.92, 1 MiB 18.35 /
// 28.67 / 16.26 (each rank sends its whole buffer to every peer, so lines lose to two-shot
// packets sooner). More ranks: not measured.
func allReduceLL128Range(nRanks int) (from, to uint64) {
	switch {
	case nRanks <= 2:
		return 128 << 10, linesMaxBytes
	case nRanks <= 4:
		return 32 << 10, 256 << 10
	}
	return 0, 0
}

// allReducePacket2Limit: two-shot packets pay off only beyond two ranks (on two, one-shot moves
// the same bytes in one step); with registered buffers, direct takes over sooner.
func allReducePacket2Limit(nRanks int, zeroCopy bool) uint64 {
	switch {
	case nRanks <= 2:
		return 0
	case zeroCopy:
		return 256 << 10
	}
	return 1 << 20
}

// allReduceDirectLimit: with registered buffers, the one-shot direct AllReduce up to here, then
// rsag_direct (whose writes use the links better than direct's reads of the peers' buffers).
func allReduceDirectLimit(nRanks int) uint64 {
	if nRanks <= 2 {
		return 8 << 20
	}
	return 4 << 20
}

// allReducePortMinBytes: with the send and receive buffers registered with copy engines, an
// AllReduce of at least this many bytes runs as port. On 2 GPUs it was 1-5 % faster than
// rsag_direct from 256 MiB and 3 % slower at 128 MiB. On 4 GPUs (scratch size a multiple of
// 2 MiB) it was 1-4 % faster at 256 MiB out of place and at 512 MiB, but 9-11 % slower at
// 128 MiB and 5-6 % at 1 GiB out of place, and unsteady in place, so on 3 or more ranks it is
// not picked.
func allReducePortMinBytes(nRanks int) uint64 {
	if nRanks <= 2 {
		return 256 << 20
	}
	return math.MaxUint64
}

// allGatherPortMinBytes: with registered receive buffers, an in-place AllGather of at least this
// many bytes (the whole output) runs through the copy engines; below it the proxy's cost per
// request (tens of microseconds per call) outweighs their speed. Out of place, direct stays
// faster at every size measured: the local copy of the input delays the copy engines.
const allGatherPortMinBytes = 256 << 20

func allGatherPacketLimit(nRanks int) uint64 {
	if nRanks <= 2 {
		return 512 << 10
	}
	return 256 << 10
}

// allGatherLL128Range: an AllGather of more than `from` and at most `to` bytes per rank sends
// LL128 lines; below, LL16 packets; above, put. Graph mode, same runs (2026-11-27, us, ll128 /
// packet / put, whole output). 2 x H200: 256 KiB 4.40 / 4.35 / 8.05, 512 KiB 4.72 / 5.07 / 8.60,
// 1 MiB 5.46 / 6.53 / 8.55, 2 MiB 7.35 / 9.55 / 10.02 (`to` is the most a slot holds as lines).
// 4 x H200: 256 KiB 5.66 / 5.24 / 11.04, 512 KiB 5.84 / 6.79 / 11.12, 2 MiB 10.69 / 17.25 / 14.00,
// 4 MiB 20.24 / 29.04 / 18.94; more ranks are not measured and take 4's range.
func allGatherLL128Range(nRanks int) (from, to uint64) {
	if nRanks <= 2 {
		return 128 << 10, linesMaxBytes
	}
	return 64 << 10, 512 << 10
}

// plan is one launch: the kernel's entry point and the grid.
type plan struct {
	algo    string
	kernel  string
	blocks  int
	threads int
}

// zeroCopy reports whether the plan's kernel reaches the peers' registered buffers (and so needs
// the call's buffer descriptors).
func (p plan) zeroCopy() bool {
	return p.algo == AlgoDirect || p.algo == AlgoRSAGDirect || p.algo == AlgoPort || p.algo == AlgoRSAGPort
}

// registered says which zero-copy paths a call's buffers allow.
type registered struct {
	zeroCopy   bool // every buffer the zero-copy kernels reach is registered (direct may run)
	copyEngine bool // and the receive buffer's registration has port channels (port may run)
	// sendCopyEngine: the send buffer's registration has port channels too (the port
	// AllReduce copies from it).
	sendCopyEngine bool
}

// chooseAllReduce picks the algorithm, kernel and grid for bytes of dt reduced with op across
// nRanks, in grids of at most maxGrid blocks (2 or more); lines says whether auto may send LL128
// lines (Comm.lines); reg says which zero-copy paths the call's send and receive buffers allow;
// forced is MSCCLPP_ALLREDUCE_ALGO ("auto" or an algorithm
// name). A forced packet algorithm whose packets would not fit a packet slot falls back to rsag;
// a forced zero-copy algorithm that the buffers do not allow is auto.
func chooseAllReduce(bytes uint64, dt DataType, op Op, nRanks, maxGrid int, lines bool, reg registered, forced string) plan {
	zeroCopy := reg.zeroCopy
	fitsOneShot := bytes <= packetMaxBytes
	fitsTwoShot := (bytes+uint64(nRanks)*packetWordBytes-1)/(uint64(nRanks)*packetWordBytes)*packetWordBytes <= packetMaxBytes
	if (forced == AlgoDirect || forced == AlgoRSAGDirect) && !zeroCopy || forced == AlgoRSAGPort && !reg.copyEngine ||
		forced == AlgoPort && !(reg.copyEngine && reg.sendCopyEngine) {
		forced = AlgoAuto
	}
	algo := AlgoRSAG
	switch forced {
	case AlgoDirect, AlgoRSAGDirect, AlgoRSAGPort, AlgoPort:
		algo = forced
	case AlgoPacket:
		if fitsOneShot {
			algo = AlgoPacket
		}
	case AlgoPacket2:
		if fitsTwoShot {
			algo = AlgoPacket2
		}
	case AlgoOneShot:
		if nRanks-1 <= maxZeroCopyPeers {
			algo = AlgoOneShot
		}
	case AlgoLL128:
		if bytes <= linesMaxBytes {
			algo = AlgoLL128
		}
	case AlgoAuto:
		linesFrom, linesTo := allReduceLL128Range(nRanks)
		switch {
		case lines && bytes > linesFrom && bytes <= linesTo:
			algo = AlgoLL128
		case bytes <= allReducePacketLimit(nRanks):
			algo = AlgoPacket
		case bytes <= allReducePacket2Limit(nRanks, zeroCopy) && fitsTwoShot:
			algo = AlgoPacket2
		case !zeroCopy && bytes <= allReduceOneShotLimit(nRanks):
			algo = AlgoOneShot
		case zeroCopy && bytes <= allReduceDirectLimit(nRanks):
			algo = AlgoDirect
		case zeroCopy && reg.copyEngine && reg.sendCopyEngine && bytes >= allReducePortMinBytes(nRanks):
			algo = AlgoPort
		case zeroCopy:
			algo = AlgoRSAGDirect
		}
	}
	kernel := allReduceKernel(algo, dt, op)
	share := bytes / uint64(nRanks)
	switch algo {
	case AlgoRSAG, AlgoRSAGDirect:
		return plan{algo, kernel, roundBlocks(share, maxGrid), rsagThreads}
	case AlgoRSAGPort, AlgoPort:
		// The reducing blocks and one more that issues the copies (kernels/src/waves.cuh).
		return plan{algo, kernel, roundBlocks(share, maxGrid-1) + 1, rsagThreads}
	case AlgoDirect:
		return plan{algo, kernel, roundBlocks(share, maxGrid), directThreads}
	case AlgoOneShot: // its entry points allow blocks of 1024 threads; 512 ran faster
		return plan{algo, kernel, clampBlocks((bytes+oneShotBytesPerBlock-1)/oneShotBytesPerBlock, maxGrid), rsagThreads}
	case AlgoLL128:
		return plan{algo, kernel, lineBlocks(bytes, maxGrid), packetThreads}
	case AlgoPacket:
		blocks, threads := packetGrid(bytes, maxGrid)
		return plan{algo, kernel, blocks, threads}
	}
	return plan{algo, kernel, packetBlocks(bytes, maxGrid), packetThreads}
}

// allReduceKernel is the entry point of algo for dt and op.
func allReduceKernel(algo string, dt DataType, op Op) string {
	return "mscclpp_allreduce_" + algo + "_" + reduceKernelSuffix(dt, op)
}

// allGatherKernel is the entry point of algo (AllGather moves bytes: one kernel for every type).
func allGatherKernel(algo string) string { return "mscclpp_allgather_" + algo }

// reduceScatterKernel is the entry point of algo for dt and op.
func reduceScatterKernel(algo string, dt DataType, op Op) string {
	return "mscclpp_reducescatter_" + algo + "_" + reduceKernelSuffix(dt, op)
}

// reduceKernelSuffix ends the name of a reducing kernel's entry point for dt and op
// (kernels/src/common.cuh, COLL_REDUCE_ENTRIES): sum has entry points of its own, the operator
// compiled in ("sum_f32"; unsigned types take the signed type's); every other operator runs in
// the type's entry point that reads the operator from the kernel argument ("f32").
func reduceKernelSuffix(dt DataType, op Op) string {
	if op == Sum {
		return "sum_" + dataTypes[dt].sumSuffix
	}
	return dataTypes[dt].suffix
}

// broadcastKernel is the entry point of algo (Broadcast moves bytes: one kernel for every type).
func broadcastKernel(algo string) string { return "mscclpp_broadcast_" + algo }

// alltoAllLinesKernel is AlltoAll's one collective kernel (kernels/src/alltoall_ll128.cu); the
// p2p kernel carries the rest.
const alltoAllLinesKernel = "mscclpp_alltoall_ll128"

// alltoAllPutKernel is AlltoAll's kernel for larger blocks (kernels/src/alltoall_put.cu).
const alltoAllPutKernel = "mscclpp_alltoall_put"

// kernelNames lists every entry point a call may launch, each once.
func kernelNames() []string {
	names := []string{allGatherKernel(AlgoPacket), allGatherKernel(AlgoLL128), allGatherKernel(AlgoPut), allGatherKernel(AlgoDirect),
		allGatherKernel(AlgoPort), broadcastKernel(AlgoPacket), broadcastKernel(AlgoPut),
		broadcastKernel(AlgoSAG), broadcastKernel(AlgoRing), broadcastKernel(AlgoLL128), alltoAllLinesKernel,
		alltoAllPutKernel}
	seen := map[string]bool{}
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	for dt := range dataTypes {
		if !dt.Reducible() {
			continue
		}
		for op := Sum; op.Valid(); op++ {
			for _, algo := range []string{AlgoPacket, AlgoPacket2, AlgoLL128, AlgoRSAG, AlgoOneShot, AlgoDirect, AlgoRSAGDirect, AlgoRSAGPort, AlgoPort} {
				add(allReduceKernel(algo, dt, op))
			}
			for _, algo := range []string{AlgoPacket, AlgoPut} {
				add(reduceScatterKernel(algo, dt, op))
			}
		}
		names = append(names, scaleKernel(dt))
	}
	return names
}

// chooseReduceScatter picks the algorithm, kernel and grid for a ReduceScatter of bytes per rank
// of dt reduced with op across nRanks, in grids of at most maxGrid blocks: packets up to
// AllGather's packet limit (each rank sends each peer as many bytes as in an AllGather of that
// size; not measured for ReduceScatter), then rsag's reduce-scatter rounds (put). There is no
// zero-copy variant: every call goes through the scratch.
func chooseReduceScatter(bytes uint64, dt DataType, op Op, nRanks, maxGrid int) plan {
	if bytes <= allGatherPacketLimit(nRanks) {
		// One packet per thread over the whole input, as packet2 counts it.
		return plan{AlgoPacket, reduceScatterKernel(AlgoPacket, dt, op), packetBlocks(bytes*uint64(nRanks), maxGrid), packetThreads}
	}
	return plan{AlgoPut, reduceScatterKernel(AlgoPut, dt, op), roundBlocks(bytes, maxGrid), rsagThreads}
}

// chooseBroadcast picks the algorithm and grid for a Broadcast of bytes across nRanks, in grids
// of at most maxGrid blocks: on 3 or more ranks whose GPUs are joined by NVLink (lines) the chain
// in LL128 lines above broadcastLL128MinBytes and below ringBroadcastMinBytes; else packets up to
// AllGather's packet limit (the root sends each peer as many bytes as a rank of such an
// AllGather); then on 2 ranks the root's put rounds into the peer's scratch; on more the scatter
// and all-gather rounds (sag), whose root sends each byte once instead of once per peer (up to
// maxZeroCopyPeers + 1 ranks: the kernel keeps the other receivers in shared memory), and from
// ringBroadcastMinBytes the chain in rounds (ring), whose ranks each store to one peer only.
// The choices on 3 or more ranks were measured on 4 x H200. forced is MSCCLPP_BROADCAST_ALGO:
// packet where the message fits a packet slot, put always, ll128 on 2 or more ranks (a chain of
// two: the root's lines to the other rank; auto does not pick it there: slower than auto's packets
// and put at every size measured, 64 KiB - 64 MiB on 2 x H200), sag and ring on the rank counts
// they serve, else auto.
func chooseBroadcast(bytes uint64, nRanks, maxGrid int, lines bool, forced string) plan {
	fitsPackets := bytes <= allGatherPacketLimit(nRanks)
	chain := nRanks >= 3
	fitsSAG := chain && nRanks-1 <= maxZeroCopyPeers
	algo := AlgoPut
	switch {
	case forced == AlgoPacket && bytes <= packetMaxBytes, forced == AlgoLL128 && nRanks >= 2, forced == AlgoPut,
		forced == AlgoSAG && fitsSAG, forced == AlgoRing && chain:
		algo = forced
	case lines && chain && bytes > broadcastLL128MinBytes && bytes < ringBroadcastMinBytes:
		algo = AlgoLL128
	case fitsPackets:
		algo = AlgoPacket
	case chain && bytes >= ringBroadcastMinBytes:
		algo = AlgoRing
	case fitsSAG:
		algo = AlgoSAG
	}
	switch algo {
	case AlgoPacket:
		return plan{AlgoPacket, broadcastKernel(AlgoPacket), packetBlocks(bytes, maxGrid), packetThreads}
	case AlgoLL128:
		return plan{AlgoLL128, broadcastKernel(AlgoLL128), lineBlocks(bytes, maxGrid), packetThreads}
	}
	return plan{algo, broadcastKernel(algo), roundBlocks(bytes, maxGrid), putThreads}
}

// chooseAlltoAll says whether an AlltoAll of bytes per block across nRanks runs as a collective
// kernel, and which, in grids of at most maxGrid blocks: LL128 lines (alltoAllLinesKernel) for
// blocks of up to alltoAllLL128MaxBytes, and alltoAllLinesMaxTotalBytes to all peers, where lines
// are on, rounds through the peers' scratch (alltoAllPutKernel) otherwise; false for one rank (a
// copy on the p2p kernel).
func chooseAlltoAll(bytes uint64, nRanks, maxGrid int, lines bool) (plan, bool) {
	switch {
	case nRanks < 2:
		return plan{}, false
	case lines && bytes <= alltoAllLL128MaxBytes && bytes*uint64(nRanks-1) <= alltoAllLinesMaxTotalBytes:
		return plan{AlgoLL128, alltoAllLinesKernel, lineBlocks(bytes*uint64(nRanks-1), maxGrid), packetThreads}, true
	}
	return plan{AlgoPut, alltoAllPutKernel, roundBlocks(bytes, maxGrid), putThreads}, true
}

// chooseAllGather picks the algorithm and grid for bytes per rank across nRanks, in grids of at
// most maxGrid blocks; lines says whether auto may send LL128 lines (Comm.lines); reg says which
// zero-copy paths the receive buffer allows; inPlace that send is this rank's part of it. A forced zero-copy algorithm that the buffers do not allow is
// auto.
func chooseAllGather(bytes uint64, nRanks, maxGrid int, lines bool, reg registered, inPlace bool, forced string) plan {
	if forced == AlgoDirect && !reg.zeroCopy || forced == AlgoPort && !reg.copyEngine {
		forced = AlgoAuto
	}
	linesFrom, linesTo := allGatherLL128Range(nRanks)
	switch {
	case forced == AlgoLL128 && bytes <= linesMaxBytes,
		forced == AlgoAuto && lines && bytes > linesFrom && bytes <= linesTo:
		return plan{AlgoLL128, allGatherKernel(AlgoLL128), lineBlocks(bytes, maxGrid), packetThreads}
	case forced == AlgoPacket && bytes <= packetMaxBytes,
		forced == AlgoAuto && bytes <= allGatherPacketLimit(nRanks):
		blocks, threads := packetGrid(bytes, maxGrid)
		return plan{AlgoPacket, allGatherKernel(AlgoPacket), blocks, threads}
	case forced == AlgoPort, forced == AlgoAuto && reg.copyEngine && inPlace && bytes*uint64(nRanks) >= allGatherPortMinBytes:
		// A block per copy request: in place, one; out of place, a block per portPartBytes
		// (each copies its part of the input into this rank's output first, and the copy
		// engines start on it while the next parts are copied).
		blocks := 1
		if !inPlace {
			blocks = clampBlocks((bytes+portPartBytes-1)/portPartBytes, maxGrid)
		}
		return plan{AlgoPort, allGatherKernel(AlgoPort), blocks, putThreads}
	case forced == AlgoDirect, forced == AlgoAuto && reg.zeroCopy:
		return plan{AlgoDirect, allGatherKernel(AlgoDirect), roundBlocks(bytes, maxGrid), putThreads}
	}
	return plan{AlgoPut, allGatherKernel(AlgoPut), roundBlocks(bytes, maxGrid), putThreads}
}

// packetBlocks: one packet per thread until limit blocks, then several per thread.
func packetBlocks(bytes uint64, limit int) int {
	words := (bytes + packetWordBytes - 1) / packetWordBytes
	return clampBlocks((words+packetThreads-1)/packetThreads, limit)
}

// packetGrid is the grid of a one-shot packet AllReduce or AllGather of bytes (per rank for
// AllGather), a thread per packet: one block while the packets fit one (of 128 to 512 threads, a
// multiple of 128), then blocks of 128 threads, so that more SMs share the stores to the peers,
// until that would take more than limit blocks; then packetBlocks. 2 x H200, graph mode, same run
// (2026-11-27, us, blocks of 512 threads / 128): AllGather 16 KiB 2.83-2.86 / 2.65-2.70, 64 KiB
// 2.99-3.00 / 2.83-2.85, 1 KiB 2.09-2.13 / 2.04-2.07; AllReduce 8 KiB 2.83-2.84 / 2.66-2.69,
// 64 KiB 3.12-3.13 / 3.03-3.05. Splitting what fits one block of 512 threads lost (AllGather 4
// KiB: 2.21-2.29 in one block, 2.39-2.44 in two of 128 threads).
func packetGrid(bytes uint64, limit int) (blocks, threads int) {
	words := (bytes + packetWordBytes - 1) / packetWordBytes
	switch {
	case words <= packetThreads:
		return 1, int(max(packetGridThreads, roundUp(words, packetGridThreads)))
	case words <= uint64(limit)*packetGridThreads:
		return int((words + packetGridThreads - 1) / packetGridThreads), packetGridThreads
	}
	return packetBlocks(bytes, limit), packetThreads
}

// lineBlocks: a thread per 16 bytes of LL128 lines until limit blocks, then several per thread.
func lineBlocks(bytes uint64, limit int) int {
	lines := ((bytes+7)/8 + lineDataWords - 1) / lineDataWords
	return clampBlocks((lines*lineLanes+packetThreads-1)/packetThreads, limit)
}

// roundBlocks: a block per roundBytesPerBlock of each rank's share, up to limit.
func roundBlocks(shareBytes uint64, limit int) int {
	return clampBlocks((shareBytes+roundBytesPerBlock-1)/roundBytesPerBlock, limit)
}

// clampBlocks: n blocks, at least one and at most limit.
func clampBlocks(n uint64, limit int) int {
	return int(max(1, min(n, uint64(limit))))
}

// forcedAlgorithms reads the environment's choices.
func forcedAlgorithms() (allReduce, allGather string) {
	return config.AllReduceAlgo.Get(), config.AllGatherAlgo.Get()
}

// forcedBroadcast reads the environment's choice for Broadcast.
func forcedBroadcast() string { return config.BroadcastAlgo.Get() }
