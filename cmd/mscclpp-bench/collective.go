package main

import "github.com/mscclpp-go/mscclpp/core/cuda"

// The collectives the benchmark runs (-op). As in nccl-tests, a row's size is the bytes of the
// largest buffer of a call: AllReduce and Broadcast their data, AllGather its output (what each
// rank receives), ReduceScatter its input (what each rank sends), AlltoAll either buffer (each
// rank sends size/n bytes to every rank), SendRecv what each rank sends to the next rank and
// receives from the previous one.
const (
	opAllReduce     = "allreduce"
	opAllGather     = "allgather"
	opReduceScatter = "reducescatter"
	opBroadcast     = "broadcast"
	opAlltoAll      = "alltoall"
	opSendRecv      = "sendrecv"
)

// collectiveNames are -op's values, in the order the help lists them.
var collectiveNames = []string{opAllReduce, opAllGather, opReduceScatter, opBroadcast, opAlltoAll, opSendRecv}

// broadcastRoot is the root of every Broadcast (nccl-tests' default).
const broadcastRoot = 0

// reduces reports whether the collective takes a reduction operator (-o).
func reduces(collective string) bool {
	return collective == opAllReduce || collective == opReduceScatter
}

// perRank reports whether a size is cut into one block per rank (so it is a multiple of the rank
// count's elements).
func perRank(collective string) bool {
	return collective == opAllGather || collective == opReduceScatter || collective == opAlltoAll
}

// ringPeers are the ranks SendRecv sends to (the next) and receives from (the previous), as in
// nccl-tests' sendrecv_perf.
func ringPeers(rank, nranks int) (next, prev int) {
	return (rank + 1) % nranks, (rank - 1 + nranks) % nranks
}

// uncheckedWhy says why impl's result of the collective in the placement on nranks ranks is timed
// but not checked (it is not defined), or is empty: it is checked. Out of place everything is
// checked. In place, as nccl-tests lays it out: the library's AlltoAll (send == recv) is checked,
// NCCL's is not (nccl-tests does not check it either); SendRecv (send == recv) is checked for the
// library on up to 2 ranks, where it sends to and receives from one peer (an exchange in place,
// collectives.h), and otherwise not: a rank may receive over data it has yet to send to another.
func uncheckedWhy(collective, impl string, inPlace bool, nranks int) string {
	switch {
	case !inPlace:
		return ""
	case collective == opAlltoAll && impl == implNCCL:
		return "timed, not checked, as nccl-tests' alltoall_perf does (it reports no errors in place)"
	case collective == opSendRecv && impl == implMscclpp && nranks <= 2:
		return ""
	case collective == opSendRecv:
		return "timed, not checked, as nccl-tests' sendrecv_perf does: one buffer is sent and received " +
			"into, so a rank may overwrite data it has yet to send"
	}
	return ""
}

// callBuffers is one call of the collective for a size and placement: its arguments, the input
// this rank writes before it and the result this rank checks after it.
type callBuffers struct {
	send, recv cuda.DevicePtr
	count      int            // the count argument, in elements
	inBytes    int            // the input's bytes at send
	out        cuda.DevicePtr // the result
	outCount   int            // its elements
}

// buffers lays one call out in the benchmark's send and receive buffers. In place is what
// nccl-tests calls it: AllReduce, Broadcast, AlltoAll and SendRecv send == recv; AllGather send is
// this rank's block of recv; ReduceScatter recv is this rank's block of send (which is then the
// receive buffer). AlltoAll's count is per peer, SendRecv's the whole message.
func (b *bench) buffers(size int64, inPlace bool) callBuffers {
	d := b.o.dtype
	n := int(size) / d.size
	switch b.o.collective {
	case opAllGather:
		per := n / b.nranks
		x := callBuffers{send: b.send, recv: b.recv, count: per, inBytes: per * d.size, out: b.recv, outCount: n}
		if inPlace {
			x.send = b.recv + cuda.DevicePtr(b.rank*per*d.size)
		}
		return x
	case opReduceScatter:
		per := n / b.nranks
		x := callBuffers{send: b.send, recv: b.recv, count: per, inBytes: int(size), out: b.recv, outCount: per}
		if inPlace {
			x.send = b.recv
			x.recv = b.recv + cuda.DevicePtr(b.rank*per*d.size)
			x.out = x.recv
		}
		return x
	case opAlltoAll:
		x := callBuffers{send: b.send, recv: b.recv, count: n / b.nranks, inBytes: int(size), out: b.recv, outCount: n}
		if inPlace {
			x.send = b.recv
		}
		return x
	}
	x := callBuffers{send: b.send, recv: b.recv, count: n, inBytes: int(size), out: b.recv, outCount: n}
	if inPlace {
		x.send = b.recv
	}
	return x
}

// expected returns element i of this rank's result of the collective of size bytes.
func (b *bench) expected(size int64) func(i int) float64 {
	n := int(size) / b.o.dtype.size
	op, nranks, rank := b.o.op, b.nranks, b.rank
	switch b.o.collective {
	case opAllGather:
		return func(i int) float64 { return expectedAllGather(n/nranks, i) }
	case opReduceScatter:
		return func(i int) float64 { return expectedAllReduce(op, nranks, rank*(n/nranks)+i) }
	case opBroadcast:
		return func(i int) float64 { return inputValue(broadcastRoot, i) }
	case opAlltoAll:
		return func(i int) float64 { return expectedAlltoAll(n/nranks, rank, i) }
	case opSendRecv:
		_, prev := ringPeers(rank, nranks)
		return func(i int) float64 { return inputValue(prev, i) }
	}
	return func(i int) float64 { return expectedAllReduce(op, nranks, i) }
}

// call enqueues one collective of im of size bytes.
func (b *bench) call(im impl, size int64, inPlace bool) error {
	d, x := b.o.dtype, b.buffers(size, inPlace)
	switch b.o.collective {
	case opAllGather:
		return im.allGather(x.send, x.recv, x.count, d, b.stream)
	case opReduceScatter:
		return im.reduceScatter(x.send, x.recv, x.count, d, b.o.op, b.stream)
	case opBroadcast:
		return im.broadcast(x.send, x.recv, x.count, d, broadcastRoot, b.stream)
	case opAlltoAll:
		return im.alltoAll(x.send, x.recv, x.count, d, b.stream)
	case opSendRecv:
		next, prev := ringPeers(b.rank, b.nranks)
		return im.sendRecv(x.send, x.recv, x.count, d, next, prev, b.stream)
	}
	return im.allReduce(x.send, x.recv, x.count, d, b.o.op, b.stream)
}
