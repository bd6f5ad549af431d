package collectives

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/channels"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/logging"
	"github.com/mscclpp-go/mscclpp/kernels"
)

// ErrClosed: the Comm was closed.
var ErrClosed = errs.New(errs.ErrInvalidUsage, "collective communicator is closed")

// Comm runs collectives among the ranks of a core.Communicator, one GPU per rank.
//
// Calls on one Comm are serialised; issue them in the same order on every rank. A Comm keeps
// the GPU memory of its scratch, channels and state until Close.
type Comm struct {
	comm   *core.Communicator
	rank   int
	nRanks int
	device int
	pctx   cuda.Context
	// maxGrid is the most blocks a call launches, the same on every rank (maxGridOf).
	maxGrid int
	// lines: auto may choose LL128 lines (ll128), every pair of the ranks' GPUs on a host being
	// two GPUs joined by NVLink (linesSafe), the same on every rank.
	lines bool
	log   *slog.Logger

	mu     sync.Mutex // guards closed and serialises launches
	closed bool

	modules  []cuda.Module
	modNames []string // modNames[i] is the name of modules[i]
	funcs    map[string]cuda.Function
	scratch  cuda.DevicePtr
	state    cuda.DevicePtr
	channels cuda.DevicePtr
	allocs   []cuda.DevicePtr
	sems     []*core.Semaphore
	ports    *ports     // the copy-engine path; nil with one rank
	span     *spanning  // the path across hosts, when the ranks span hosts (spanning.go); nil otherwise
	args     kernelArgs // the fields every call shares
	p2pArgs  p2pArgs    // the fields every SendRecv and AlltoAll launch shares (p2p.go)

	regTable cuda.DevicePtr                  // coll::Registration [maxRegistrations][nRanks]; 0 before the first
	regSlots [maxRegistrations]*Registration // by table row; nil: free
	regs     []*Registration                 // the open registrations, sorted by address

	abort abortState // ending waits for peers that will never come (abort.go)
}

// layout is where things are in a scratch buffer, the same on every rank.
type layout struct {
	slotBytes  uint64 // one rank's packet slot
	descOffset uint64 // start of the descriptor packets (zero-copy handshakes)
	dataOffset uint64 // start of the data banks
	chunkBytes uint64 // one (rank, block) data slot
	total      uint64 // the allocation's size: a multiple of peerAllocAlign
}

// peerAllocAlign: the scratch's size is rounded up to a multiple of it. The copy engines write
// into a peer's allocation at about 307 GB/s instead of 390 (H200, NVLink) when the allocation's
// size is not a multiple of 2 MiB, wherever in it the copy lands; SM stores are not affected
// (bench_ce_bound's shift and pad arguments, docs/PERFORMANCE.md). The port AllReduce copies
// into the scratch.
const peerAllocAlign = 2 << 20

// slowModuleLoad is how long a kernel load may take before a warning says the driver was
// compiling PTX (a cached load takes milliseconds).
const slowModuleLoad = 5 * time.Second

func scratchLayout(nRanks int) layout {
	const align = 256
	slot := uint64(packetSlotBytes)
	packets := 2 * packetPhases * uint64(nRanks) * slot // 2 parities x phases x ranks
	descOffset := roundUp(packets, align)
	descs := 2 * maxBlocks * uint64(nRanks) * descWords * 16 // 2 parities x blocks x ranks, LL16
	dataOffset := roundUp(descOffset+descs, align)
	slots := uint64(4 * nRanks * maxBlocks) // 2 banks x 2 regions x ranks x blocks
	chunk := max(minChunkBytes, dataBankBytes/slots/align*align)
	total := roundUp(dataOffset+slots*chunk, peerAllocAlign)
	return layout{slotBytes: slot, descOffset: descOffset, dataOffset: dataOffset, chunkBytes: chunk, total: total}
}

// roundUp returns n rounded up to a multiple of to.
func roundUp(n, to uint64) uint64 { return (n + to - 1) / to * to }

// New builds this rank's Comm over comm on GPU device (a CUDA device ordinal). Collective: every
// rank of comm calls it, each with its own GPU; it returns once every peer's side is ready or
// ctx ends. It uses comm's connection tag 0, semaphore tags [0, maxBlocks] and (for SendRecv and
// AlltoAll) [p2pSemaphoreTag, p2pSemaphoreTag + 2*p2pLanes), memory tag p2pMemoryTag with every
// peer, and, once Register first binds a buffer to the port channels, a proxy goroutine (on its
// own OS thread) for them, stopped by Close. When the ranks span hosts it uses instead, on comm's
// bootstrap, the connection tag core.MaxUserTag-1 and the memory tags core.MaxUserTag-1 and -2
// (hostlink.go), and bootstrap tags from core.CollectivesTagBase.
func New(ctx context.Context, comm *core.Communicator, device int) (c *Comm, err error) {
	if comm == nil {
		return nil, fmt.Errorf("new collective communicator: nil communicator: %w", errs.ErrInvalidArgument)
	}
	b := comm.Bootstrap()
	c = &Comm{comm: comm, rank: b.Rank(), nRanks: b.Size(), device: device, funcs: map[string]cuda.Function{},
		log: logging.ForRank(b.Rank())}
	what := fmt.Sprintf("new collective communicator (rank %d of %d, GPU %d)", c.rank, c.nRanks, device)
	dev, err := cuda.GetDevice(device)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if c.pctx, err = dev.RetainPrimaryContext(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer func(c *Comm) { // c as it is now: a failing return sets the result to nil
		if err != nil {
			err = errors.Join(fmt.Errorf("%s: %w", what, err), c.release())
		}
	}(c)
	gpu, err := identifyGPU(dev)
	if err != nil {
		return nil, err
	}
	ranks, err := exchangeRanks(ctx, b, rankIdentity{host: core.HostHash(), gpu: gpu, limit: int(config.CollMaxBlocks.Get())})
	if err != nil {
		return nil, err
	}
	if hashes := hostHashes(ranks); slices.ContainsFunc(hashes, func(h uint64) bool { return h != hashes[0] }) {
		if c.span, err = newSpanning(ctx, b, comm.Context(), device, hashes, c.pctx); err != nil {
			return nil, err
		}
		c.log.Info("collective communicator ready across hosts", "gpu", device, "ranks", c.nRanks,
			"hosts", len(c.span.hosts), "ranksOnThisHost", c.span.local.nRanks)
		return c, nil
	}
	if c.lines, err = agreeAll(ctx, b, linesSafe(dev, c.rank, ranks)); err != nil {
		return nil, fmt.Errorf("agree on LL128 lines: %w", err)
	}
	if !c.lines {
		c.log.Info("LL128 lines (ll128) off: a rank shares its GPU, reaches a peer's GPU without NVLink, or cannot see it (CUDA_VISIBLE_DEVICES); "+
			"MSCCLPP_ALLREDUCE_ALGO / MSCCLPP_ALLGATHER_ALGO=ll128 still force them", "gpu", device)
		if ar, ag := forcedAlgorithms(); ar == AlgoLL128 || ag == AlgoLL128 {
			c.log.Warn("ll128 forced where LL128 lines may arrive in pieces (ranks sharing a GPU, no NVLink between "+
				"some of the ranks' GPUs, or a GPU a rank cannot see): results may be wrong", "gpu", device)
		}
	}
	var sharing int
	c.maxGrid, sharing = maxGridOf(ranks, c.rank)
	if sharing > 1 {
		c.log.Warn("ranks share this GPU: each call launches at most maxGrid blocks so that every rank's blocks "+
			"fit at once; their kernels run side by side only under MPS (otherwise the driver takes turns "+
			"between the processes): for tests, not for speed", "gpu", device, "ranksOnThisGPU", sharing,
			"maxGrid", c.maxGrid)
	}
	start := time.Now()
	lay := scratchLayout(c.nRanks)
	if err := c.onGPU(func() error { return c.allocate(lay) }); err != nil {
		return nil, err
	}
	if c.nRanks > 1 {
		if err := c.connect(ctx, lay); err != nil {
			return nil, err
		}
	}
	c.args = kernelArgs{
		Channels: uintptr(c.channels), Scratch: uintptr(c.scratch), State: uintptr(c.state),
		Rank: uint64(c.rank), NRanks: uint64(c.nRanks), SlotBytes: lay.slotBytes, ChunkBytes: lay.chunkBytes,
		DataOffset: lay.dataOffset, MaxSpins: config.CollMaxSpins.Get(), DescOffset: lay.descOffset,
		Abort: uintptr(c.abort.dev),
	}
	if c.ports != nil {
		c.args.Ports, c.args.PortRows = uintptr(c.ports.table), uint64(c.ports.rows)
	}
	c.p2pArgs.Rank, c.p2pArgs.NRanks, c.p2pArgs.MaxSpins = uint64(c.rank), uint64(c.nRanks), c.args.MaxSpins
	c.p2pArgs.Abort = c.args.Abort
	if c.nRanks > 1 {
		c.startWatchdog(b)
	}
	c.log.Info("collective communicator ready", "gpu", device, "ranks", c.nRanks, "scratchBytes", lay.total,
		"chunkBytes", lay.chunkBytes, "maxGrid", c.maxGrid, "ll128", c.lines, "took", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// allGatherer is the part of a bootstrap that exchangeRanks uses (*bootstrap.TCP is one).
type allGatherer interface {
	Rank() int
	Size() int
	AllGather(ctx context.Context, buf []byte, bytesPerRank int) error
}

// gpuIdentity is what New learns of every rank's GPU: which GPU it is (a hash of the host's
// identity and the GPU's PCI address, equal for ranks on the same GPU) and its SM count.
type gpuIdentity struct {
	id  uint64
	sms int
}

// identifyGPU returns dev's identity: its host, its PCI address and its SM count. MIG instances
// of one GPU share its PCI address, so ranks on different instances count as sharing it: their
// grid is smaller than it need be, never too large.
func identifyGPU(dev cuda.Device) (gpuIdentity, error) {
	sms, err := dev.MultiprocessorCount()
	if err != nil {
		return gpuIdentity{}, err
	}
	bus, err := dev.PCIBusID()
	if err != nil {
		return gpuIdentity{}, err
	}
	h := fnv.New64a() // a hash's Write never fails
	h.Write(binary.LittleEndian.AppendUint64(nil, core.HostHash()))
	h.Write([]byte(bus))
	return gpuIdentity{id: h.Sum64(), sms: sms}, nil
}

// linesSafe reports whether, as this rank sees it, LL128 lines reach every peer on its host whole:
// each peer's GPU is one this process can see and reaches over a link that carries atomics
// natively (NVLink). Over PCIe a 128-byte store may arrive in pieces, so that a line's flag can
// land before its data (NCCL keeps LL128 off there too). A peer on this rank's own GPU counts as
// not safe: nothing establishes that a concurrent load sees a local 128-byte store whole (NCCL
// never puts two ranks on one GPU), and ranks sharing a GPU are for correctness tests, not speed.
// So does a peer's GPU this process cannot see (CUDA_VISIBLE_DEVICES), or a failing driver call.
func linesSafe(dev cuda.Device, me int, ranks []rankIdentity) bool {
	visible := map[uint64]cuda.Device{}
	n, err := cuda.DeviceCount()
	if err != nil {
		return false
	}
	for i := range n {
		d, err := cuda.GetDevice(i)
		if err != nil {
			return false
		}
		id, err := identifyGPU(d)
		if err != nil {
			return false
		}
		visible[id.id] = d
	}
	return linesSafeAmong(me, ranks, func(gpu uint64) bool {
		peer, ok := visible[gpu]
		if !ok {
			return false
		}
		linked, err := dev.NativeAtomicsWith(peer)
		return err == nil && linked
	})
}

// linesSafeAmong reports whether every other rank on rank me's host runs on a GPU other than me's
// that linked (given its gpuIdentity.id) says LL128 lines reach whole.
func linesSafeAmong(me int, ranks []rankIdentity, linked func(gpu uint64) bool) bool {
	for r, id := range ranks {
		if r == me || id.host != ranks[me].host {
			continue
		}
		if id.gpu.id == ranks[me].gpu.id || !linked(id.gpu.id) {
			return false
		}
	}
	return true
}

// agreeAll reports whether ok holds on every rank: one all-gather, so that every rank gets the same
// answer. Collective.
func agreeAll(ctx context.Context, b allGatherer, ok bool) (bool, error) {
	all := make([]byte, b.Size())
	if ok {
		all[b.Rank()] = 1
	}
	if b.Size() > 1 {
		if err := b.AllGather(ctx, all, 1); err != nil {
			return false, err
		}
	}
	return !slices.Contains(all, 0), nil
}

// rankIdentity is what New learns of every rank, in one exchange: its host (core.HostHash), its
// GPU, and the grid limit it asks for (MSCCLPP_COLL_MAX_BLOCKS; 0 for none).
type rankIdentity struct {
	host  uint64
	gpu   gpuIdentity
	limit int
}

// exchangeRanks all-gathers every rank's identity. Collective: every rank calls it.
func exchangeRanks(ctx context.Context, b allGatherer, me rankIdentity) ([]rankIdentity, error) {
	const hostBytes, idBytes, smsBytes, limitBytes = 8, 8, 4, 4
	const record = hostBytes + idBytes + smsBytes + limitBytes
	all := make([]byte, record*b.Size())
	mine := all[record*b.Rank():]
	binary.LittleEndian.PutUint64(mine, me.host)
	binary.LittleEndian.PutUint64(mine[hostBytes:], me.gpu.id)
	binary.LittleEndian.PutUint32(mine[hostBytes+idBytes:], uint32(me.gpu.sms))
	binary.LittleEndian.PutUint32(mine[hostBytes+idBytes+smsBytes:], uint32(me.limit))
	if b.Size() > 1 {
		if err := b.AllGather(ctx, all, record); err != nil {
			return nil, fmt.Errorf("exchange host and GPU identities: %w", err)
		}
	}
	ranks := make([]rankIdentity, b.Size())
	for r := range ranks {
		rec := all[record*r:]
		ranks[r] = rankIdentity{
			host:  binary.LittleEndian.Uint64(rec),
			gpu:   gpuIdentity{id: binary.LittleEndian.Uint64(rec[hostBytes:]), sms: int(binary.LittleEndian.Uint32(rec[hostBytes+idBytes:]))},
			limit: int(binary.LittleEndian.Uint32(rec[hostBytes+idBytes+smsBytes:])),
		}
	}
	return ranks, nil
}

// hostHashes lists every rank's host.
func hostHashes(ranks []rankIdentity) []uint64 {
	hashes := make([]uint64, len(ranks))
	for r, id := range ranks {
		hashes[r] = id.host
	}
	return hashes
}

// maxGridOf returns the grid limit of every call, the same on every rank, and how many ranks
// share rank me's GPU (1 when it has its own). The blocks of a call wait on each other (and on
// the same blocks of the peers), so they must all be resident at once, and a block of the round
// kernels fills an SM's registers: the limit is maxBlocks, or less where a GPU has fewer SMs for
// each rank it runs (its SM count divided by the ranks on it), or where a rank asks for less,
// but at least 2.
func maxGridOf(ranks []rankIdentity, me int) (grid, sharing int) {
	ranksOn := make(map[uint64]int, len(ranks))
	grid = maxBlocks
	for _, id := range ranks {
		ranksOn[id.gpu.id]++
		if id.limit > 0 {
			grid = min(grid, id.limit)
		}
	}
	for _, id := range ranks {
		grid = min(grid, id.gpu.sms/ranksOn[id.gpu.id])
	}
	// rsag_port and port need a reducing block and an issuing one.
	return max(grid, 2), ranksOn[ranks[me].gpu.id]
}

// Rank and NRanks are this rank and the number of ranks.
func (c *Comm) Rank() int   { return c.rank }
func (c *Comm) NRanks() int { return c.nRanks }

// Device is the CUDA device ordinal of this rank's GPU.
func (c *Comm) Device() int { return c.device }

// allocate loads the kernels and allocates the zeroed scratch and state. The GPU's context is current.
func (c *Comm) allocate(lay layout) error {
	if err := c.loadModules(); err != nil {
		return err
	}
	if err := c.allocAbortWords(); err != nil {
		return err
	}
	// Resolve every entry point now: nothing but the launch happens in a call (which may be
	// inside a CUDA graph capture).
	for _, name := range append(kernelNames(), p2pKernel, p2pLinesKernel) {
		if _, err := c.function(name); err != nil {
			return err
		}
	}
	var err error
	if c.scratch, err = c.alloc(int(lay.total)); err != nil {
		return fmt.Errorf("scratch of %d bytes: %w", lay.total, err)
	}
	if c.state, err = c.alloc(stateBytes); err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// loadModules loads the embedded kernel modules; the GPU's context is current. The driver
// compiles a module's PTX the first time it meets it on a GPU model and caches the result (under
// ~/.nv/ComputeCache unless CUDA_CACHE_PATH or CUDA_CACHE_DISABLE say otherwise): tens of seconds
// for all of them. Built by make, the large modules carry machine code for sm_80 and sm_90 and
// the driver compiles only the small ones, a few seconds (package kernels). So the time the load
// took is logged, and a load slow enough to look like a hang says why.
func (c *Comm) loadModules() error {
	mods, err := kernels.Modules()
	if err != nil {
		return err
	}
	start := time.Now()
	for _, m := range mods {
		mod, err := cuda.LoadModule(m.Image)
		if err != nil {
			return fmt.Errorf("load kernels %s: %w", m.Name, err)
		}
		c.modules = append(c.modules, mod)
		c.modNames = append(c.modNames, m.Name)
	}
	took := time.Since(start)
	c.log.Info("kernels loaded", "modules", len(mods), "format", kernels.ImageFormat, "took", took.Round(time.Millisecond))
	if took > slowModuleLoad {
		c.log.Warn("the CUDA driver compiled the kernels' PTX for this GPU; later runs load it from the driver's cache (~/.nv/ComputeCache unless CUDA_CACHE_PATH or CUDA_CACHE_DISABLE is set)",
			"took", took.Round(time.Second), "format", kernels.ImageFormat)
	}
	return nil
}

// alloc allocates n zeroed bytes, freed by release. The GPU's context is current.
func (c *Comm) alloc(n int) (cuda.DevicePtr, error) {
	s, err := cuda.NewStream()
	if err != nil {
		return 0, err
	}
	p, err := cuda.MemAllocZeroed(n, s)
	if err == nil {
		c.allocs = append(c.allocs, p)
	}
	return p, errors.Join(err, s.Destroy())
}

// connect connects to every peer, exchanges the scratch buffers, builds a semaphore per (block,
// peer), uploads the memory channels' device handles, builds the point-to-point state
// (connectP2P: a p2p scratch and semaphores of its own) and the port channels.
func (c *Comm) connect(ctx context.Context, lay layout) error {
	cctx := c.comm.Context()
	mine, err := cctx.RegisterMemory(c.scratch, lay.total, core.TransportP2P)
	if err != nil {
		return fmt.Errorf("register scratch: %w", err)
	}
	peers := make([]int, 0, c.nRanks-1)
	for r := 0; r < c.nRanks; r++ {
		if r != c.rank {
			peers = append(peers, r)
		}
	}
	cfg := core.EndpointConfig{Transport: core.TransportP2P, Device: core.Device{Type: core.DeviceGPU, ID: c.device}}
	connFutures := make([]core.Future[*core.Connection], len(peers))
	for i, r := range peers {
		connFutures[i] = c.comm.Connect(cfg, r, 0)
	}
	byRank, err := c.exchangeMemory(ctx, mine, 0)
	if err != nil {
		return fmt.Errorf("exchange scratch: %w", err)
	}
	conns := make([]*core.Connection, len(peers))
	theirs := make([]core.RegisteredMemory, len(peers))
	for i, r := range peers {
		if conns[i], err = connFutures[i].Get(ctx); err != nil {
			return fmt.Errorf("connect to rank %d: %w", r, err)
		}
		theirs[i] = byRank[r]
	}
	semFutures := make([]core.Future[*core.Semaphore], maxBlocks*len(peers))
	for blk := 0; blk < maxBlocks; blk++ {
		for i, r := range peers {
			semFutures[blk*len(peers)+i] = c.comm.BuildSemaphore(conns[i], r, blk)
		}
	}
	handles := make([]channels.MemoryChannelDeviceHandle, len(semFutures))
	for k, f := range semFutures {
		sem, err := f.Get(ctx)
		if err != nil {
			return fmt.Errorf("semaphore of block %d with rank %d: %w", k/len(peers), peers[k%len(peers)], err)
		}
		c.sems = append(c.sems, sem)
		ch, err := channels.NewMemoryChannel(sem, theirs[k%len(peers)], mine, c.scratch)
		if err != nil {
			return fmt.Errorf("channel of block %d with rank %d: %w", k/len(peers), peers[k%len(peers)], err)
		}
		handles[k] = ch.DeviceHandle()
	}
	if c.channels, err = uploadNew(c, handles); err != nil {
		return fmt.Errorf("channel handles: %w", err)
	}
	scratch := make([]span, len(peers))
	for i, m := range theirs {
		scratch[i] = span{m.Data(), m.Size()}
	}
	if err := c.connectP2P(ctx, peers, conns); err != nil {
		return err
	}
	return c.connectPorts(ctx, peers, conns, scratch)
}

// exchangeMemory sends mine to every peer under memory tag `tag` and receives every peer's,
// mapped here: theirs[r] is rank r's (theirs[c.rank] is left zero). The peers run it with the
// same tag; on an error the memory received so far stays mapped in theirs.
func (c *Comm) exchangeMemory(ctx context.Context, mine core.RegisteredMemory, tag int) (theirs []core.RegisteredMemory, err error) {
	sends := make([]core.Future[struct{}], c.nRanks)
	recvs := make([]core.Future[core.RegisteredMemory], c.nRanks)
	for peer := range c.nRanks {
		if peer != c.rank {
			sends[peer] = c.comm.SendMemory(mine, peer, tag)
			recvs[peer] = c.comm.RecvMemory(peer, tag)
		}
	}
	theirs = make([]core.RegisteredMemory, c.nRanks)
	for peer := range c.nRanks {
		if peer == c.rank {
			continue
		}
		if _, err := sends[peer].Get(ctx); err != nil {
			return theirs, fmt.Errorf("send to rank %d: %w", peer, err)
		}
		if theirs[peer], err = recvs[peer].Get(ctx); err != nil {
			return theirs, fmt.Errorf("receive from rank %d: %w", peer, err)
		}
	}
	return theirs, nil
}

// uploadNew allocates device memory for s (freed by release) and copies s there, with the
// Comm's GPU context pushed.
func uploadNew[T any](c *Comm, s []T) (p cuda.DevicePtr, err error) {
	n := len(s) * int(unsafe.Sizeof(s[0]))
	err = c.onGPU(func() error {
		if p, err = c.alloc(n); err != nil {
			return err
		}
		return upload(p, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), n))
	})
	return p, err
}

// upload copies b to device memory at dst through a pinned staging buffer. A context is current.
func upload(dst cuda.DevicePtr, b []byte) error {
	host, err := cuda.MemHostAlloc(len(b))
	if err != nil {
		return err
	}
	copy(unsafe.Slice((*byte)(host), len(b)), b)
	src, err := cuda.MemHostGetDevicePointer(host)
	if err == nil {
		var s cuda.Stream
		if s, err = cuda.NewStream(); err == nil {
			err = errors.Join(cuda.MemcpyAsync(dst, src, len(b), s), s.Synchronize(), s.Destroy())
		}
	}
	return errors.Join(err, cuda.MemFreeHost(host))
}

// function returns the kernel named name, from the module moduleFor names.
func (c *Comm) function(name string) (cuda.Function, error) {
	if f, ok := c.funcs[name]; ok {
		return f, nil
	}
	i, ok := moduleFor(name, c.modNames)
	if !ok {
		return cuda.Function{}, fmt.Errorf("kernel %s is not in the embedded modules: %w", name, errs.ErrInternal)
	}
	f, err := c.modules[i].Function(name)
	if err != nil {
		return cuda.Function{}, err
	}
	c.funcs[name] = f
	return f, nil
}

// launchKernel queues kernel name, resolved when the Comm was built, on stream s: grid blocks of
// threads threads, with args as its one parameter. c.mu is held.
func (c *Comm) launchKernel(name string, grid, threads uint32, s cuda.Stream, args []byte) error {
	f, ok := c.funcs[name]
	if !ok {
		return fmt.Errorf("kernel %s was not loaded: %w", name, errs.ErrInternal)
	}
	return cuda.LaunchKernelInContext(c.pctx, f, grid, threads, s, args)
}

// moduleFor returns the index of the module of kernel name in modNames: the module named by the
// longest prefix of the kernel's name ("mscclpp_allreduce_packet_f32" is in "allreduce_packet",
// not in "allreduce_packet2"; "mscclpp_allreduce_rsag_port_f32" in "allreduce_rsag_port", not
// in "allreduce_rsag").
func moduleFor(name string, modNames []string) (int, bool) {
	best, found := 0, false
	for i, m := range modNames {
		if (strings.HasPrefix(name, "mscclpp_"+m+"_") || name == "mscclpp_"+m) && (!found || len(m) > len(modNames[best])) {
			best, found = i, true
		}
	}
	return best, found
}

// onGPU runs f with the Comm's GPU context pushed on the calling OS thread (and popped after),
// so a C caller's thread keeps its own context.
func (c *Comm) onGPU(f func() error) error { return c.pctx.Do(f) }

// Close stops the port channels' proxy and releases the Comm's GPU memory, semaphores, kernels
// and registrations. Local: the caller makes sure that no collective of this Comm is still
// running, here or on a peer. A second Close returns ErrClosed.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.closed = true
	c.stopWatchdog()
	return c.release()
}

// release frees what New acquired so far.
func (c *Comm) release() error {
	var errList []error
	if c.span != nil {
		errList = append(errList, c.span.close())
		c.span = nil
	}
	for _, r := range c.regs {
		r.closed = true
		errList = append(errList, r.unmapPeers())
	}
	c.regs, c.regSlots = nil, [maxRegistrations]*Registration{}
	// The proxy stops before the memory it copies is freed.
	errList = append(errList, c.ports.close())
	c.ports = nil
	for _, s := range c.sems {
		errList = append(errList, s.Close())
	}
	errList = append(errList, c.onGPU(func() error {
		var errList []error
		for _, p := range c.allocs {
			errList = append(errList, cuda.MemFree(p))
		}
		for _, m := range c.modules {
			errList = append(errList, m.Unload())
		}
		errList = append(errList, c.freeAbortWords())
		return errors.Join(errList...)
	}))
	errList = append(errList, c.pctx.Release())
	c.sems, c.allocs, c.modules, c.funcs = nil, nil, nil, nil
	return errors.Join(errList...)
}
