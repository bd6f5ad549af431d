// Package collectives implements AllReduce, AllGather, ReduceScatter, Broadcast, Send/Recv and
// AlltoAll on the memory channels of package channels, with the kernels of package kernels.
//
// A Comm is built once per rank over a core.Communicator (collective: every rank calls New):
// it connects to every peer over CUDA IPC, allocates and exchanges a scratch buffer (about 512
// MiB plus 13.5 MiB per rank of GPU memory, up to 16 ranks; Send/Recv's own, 41 MiB per rank:
// p2pScratchBytes), builds one memory-channel semaphore per (thread block, peer) and loads the
// kernels. After that a call only queues its kernel on the caller's stream (a SendRecv whose
// transfers go both in lines and on lanes, two): no allocation, no host synchronisation, no
// host-device round trip, so calls can be captured in a CUDA graph and replayed.
//
// Semantics follow NCCL: counts are in elements; AllReduce reduces count elements of sendbuf
// across ranks into recvbuf (in place when they are equal); AllGather gathers sendCount
// elements of every rank into recvbuf, rank r's at r*sendCount (in place when sendbuf is the
// rank's own part of recvbuf); ReduceScatter reduces block r (recvCount elements at
// r*recvCount) of every rank's sendbuf into recvbuf on rank r (in place when recvbuf is the rank's
// own block of sendbuf); Broadcast copies count elements of the root's sendbuf into every rank's
// recvbuf (in place when they are equal); SendRecv runs a set of sends and receives with any
// peers as one call, matched with the peers' in order per pair of ranks (p2p.go), and AlltoAll
// sends block j of sendbuf to rank j (in place when sendbuf is recvbuf). Every type moves; AllReduce and ReduceScatter reduce with
// sum, prod, max, min and avg every type but fp8 (DataType.Reducible). Scale is local, not a
// collective: dst = src times a scalar given by value or read from device memory when it runs,
// on this rank's GPU (NCCL's PreMulSum operators are a Scale, then a sum; scale.go). Buffers are
// device memory of the Comm's GPU, aligned to their element size; any count works. Every rank must issue the same calls in the same order, and the
// calls of one Comm must run one after the other on the GPU: queue them on one stream (or order
// their streams with events). For collectives that overlap, use one Comm per stream.
//
// Algorithms (see docs/PERFORMANCE.md for the measured crossovers):
//   - packet: one-shot with LL packets (data and flag in one 16-byte store) into the peers'
//     scratch, for small messages: no signal round trip (ReduceScatter's is packet2's first half);
//   - oneshot (AllReduce, 2 ranks past the packet limit to 8 MiB): every rank copies its whole
//     input into every peer's scratch, one signal exchange per round, and reduces all the inputs
//     itself;
//   - rsag (AllReduce): reduce-scatter then all-gather in pipelined rounds, one semaphore per
//     thread block and peer;
//   - put (AllGather, Broadcast, AlltoAll): copies into the peers' scratch (Broadcast: the
//     root's only; AlltoAll: each peer's block), a signal per round; ReduceScatter's put is rsag's
//     reduce-scatter rounds;
//   - sag (Broadcast on 3 or more ranks): the root scatters a piece of each round to each
//     other rank, which passes it on to the others (all-gather), two signals per round;
//   - ring (Broadcast on 3 or more ranks, from 256 MiB): a chain from the root, each rank storing
//     each round into the next rank's scratch and its own output, two signals per round;
//   - ll128: LL128 lines (120 data bytes and a flag per 128-byte line) between GPUs joined by
//     NVLink: one-shot for AllReduce and AllGather at medium sizes; for Broadcast on 3 or more
//     ranks from 64 KiB to 256 MiB, the ring's chain in lines, each line passed on as it arrives;
//     for AlltoAll blocks of up to 2.1 MiB and 4 MiB to all peers (put above);
//   - direct and rsag_direct: zero-copy, for buffers registered with Register (below);
//   - port (AllGather): zero-copy through port channels: the copy engines copy between the
//     registered buffers (large in-place calls);
//   - port (AllReduce): every byte over NVLink on the copy engines, the SMs reducing from local
//     memory; picked on 2 ranks from 256 MiB when the send and receive buffers are registered
//     (measured there 1-5 % faster than rsag_direct; on 4 GPUs faster only at some sizes);
//   - rsag_port (AllReduce, forced only): rsag's reduce-scatter on the SMs in waves, each
//     wave's all-gather on the copy engines while the SMs reduce the next, the last wave's on
//     the SMs (measured: faster than rsag_direct only at 1 GiB on 2 GPUs, by 2 %; not on 4).
//
// A call launches at most 128 thread blocks, and no more than the smallest SM count of the ranks'
// GPUs: its blocks wait on each other, so they must all be resident at once. A kernel that holds
// SMs on another stream meanwhile delays the call until its blocks fit. The calls of two Comms
// that overlap on a GPU wait for each other's SMs: they must fit together (MSCCLPP_COLL_MAX_BLOCKS
// caps every call's blocks; docs/CONFIG.md) or run in the same order on every rank, else each
// rank may hold the SMs that another's call needs. Ranks may share a GPU (more ranks than GPUs,
// for tests): a call then launches at most that GPU's SM count divided by the ranks on it, and
// their kernels run side by side only under MPS (otherwise the driver takes turns between the
// processes, which is correct but slow); New logs a warning. Under MPS the port channels' copies
// needed more hardware queues per process (CUDA_DEVICE_MAX_CONNECTIONS; docs/GPU-HOSTS.md).
//
// Data goes through the scratch buffers unless the buffers are registered (ReduceScatter and
// Broadcast always go through the scratch): Register (collective,
// in the same order on every rank) maps a buffer into every peer, and large calls whose buffers
// lie in registered buffers on every rank (AllReduce: send and recv; AllGather: recv) then move
// data straight between the ranks' buffers. A call whose ranks disagree about registration fails
// on the GPU rather than writing astray: its kernels trap, or give up after MSCCLPP_COLL_MAX_SPINS
// polls.
//
// No call waits for ever for a peer that will not come (abort.go): when a peer's bootstrap link
// ends, or Abort is called, the kernels waiting for a peer give up within milliseconds, and Err
// (and every later call) names the failure; a kernel that polls MSCCLPP_COLL_MAX_SPINS times for a
// frozen peer gives up too (docs/CONFIG.md). The CUDA context stays usable.
//
// Ranks on several hosts (core.HostHash differs; MSCCLPP_HOSTID sets it): New builds the path of
// spanning.go instead, a Comm per host plus a step across hosts through host memory over
// libfabric links (hostlink.go). AllReduce, AllGather, ReduceScatter, Broadcast, Scale, SendRecv and AlltoAll
// work, each call waiting for its stream (so not in CUDA graphs); Register returns ErrAcrossHosts.
package collectives
