package main

import (
	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// impl is one implementation of the collectives the benchmark measures. Each call only queues
// work on s (so it can be captured into a CUDA graph); counts are in elements.
type impl interface {
	name() string // implMscclpp or implNCCL, as rows and JSON name it
	allReduce(send, recv cuda.DevicePtr, count int, d dataType, op redOp, s cuda.Stream) error
	allGather(send, recv cuda.DevicePtr, sendCount int, d dataType, s cuda.Stream) error
	reduceScatter(send, recv cuda.DevicePtr, recvCount int, d dataType, op redOp, s cuda.Stream) error
	broadcast(send, recv cuda.DevicePtr, count int, d dataType, root int, s cuda.Stream) error
	// alltoAll sends count elements to every rank (block j of send to rank j).
	alltoAll(send, recv cuda.DevicePtr, count int, d dataType, s cuda.Stream) error
	// sendRecv sends count elements to sendPeer and receives count elements from recvPeer, in one
	// call (the library) or one group (NCCL).
	sendRecv(send, recv cuda.DevicePtr, count int, d dataType, sendPeer, recvPeer int, s cuda.Stream) error
}

// mscclppImpl is the library's collectives, through the Go API.
type mscclppImpl struct{ c *collectives.Comm }

func (mscclppImpl) name() string { return implMscclpp }

func (m mscclppImpl) allReduce(send, recv cuda.DevicePtr, count int, d dataType, op redOp, s cuda.Stream) error {
	return m.c.AllReduce(send, recv, count, d.coll, op.coll, s)
}

func (m mscclppImpl) allGather(send, recv cuda.DevicePtr, sendCount int, d dataType, s cuda.Stream) error {
	return m.c.AllGather(send, recv, sendCount, d.coll, s)
}

func (m mscclppImpl) reduceScatter(send, recv cuda.DevicePtr, recvCount int, d dataType, op redOp, s cuda.Stream) error {
	return m.c.ReduceScatter(send, recv, recvCount, d.coll, op.coll, s)
}

func (m mscclppImpl) broadcast(send, recv cuda.DevicePtr, count int, d dataType, root int, s cuda.Stream) error {
	return m.c.Broadcast(send, recv, count, d.coll, root, s)
}

func (m mscclppImpl) alltoAll(send, recv cuda.DevicePtr, count int, d dataType, s cuda.Stream) error {
	return m.c.AlltoAll(send, recv, count, d.coll, s)
}

func (m mscclppImpl) sendRecv(send, recv cuda.DevicePtr, count int, d dataType, sendPeer, recvPeer int, s cuda.Stream) error {
	ops := [2]collectives.P2POp{
		{Peer: sendPeer, Send: true, Buf: send, Count: count, Type: d.coll},
		{Peer: recvPeer, Buf: recv, Count: count, Type: d.coll},
	}
	return m.c.SendRecv(ops[:], s)
}

// ncclImpl is NCCL, dlopened in the same process (nccl.go).
type ncclImpl struct{ c ncclComm }

func (ncclImpl) name() string { return implNCCL }

func (n ncclImpl) allReduce(send, recv cuda.DevicePtr, count int, d dataType, op redOp, s cuda.Stream) error {
	return n.c.allReduce(send, recv, count, d.nccl, op.nccl, s)
}

func (n ncclImpl) allGather(send, recv cuda.DevicePtr, sendCount int, d dataType, s cuda.Stream) error {
	return n.c.allGather(send, recv, sendCount, d.nccl, s)
}

func (n ncclImpl) reduceScatter(send, recv cuda.DevicePtr, recvCount int, d dataType, op redOp, s cuda.Stream) error {
	return n.c.reduceScatter(send, recv, recvCount, d.nccl, op.nccl, s)
}

func (n ncclImpl) broadcast(send, recv cuda.DevicePtr, count int, d dataType, root int, s cuda.Stream) error {
	return n.c.broadcast(send, recv, count, d.nccl, root, s)
}

func (n ncclImpl) alltoAll(send, recv cuda.DevicePtr, count int, d dataType, s cuda.Stream) error {
	return n.c.alltoAll(send, recv, count, d.nccl, s)
}

func (n ncclImpl) sendRecv(send, recv cuda.DevicePtr, count int, d dataType, sendPeer, recvPeer int, s cuda.Stream) error {
	return n.c.sendRecv(send, recv, count, d.nccl, sendPeer, recvPeer, s)
}
