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
