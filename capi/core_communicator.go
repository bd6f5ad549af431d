package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"context"
	"sync"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
)

// The communicators and futures of the primitive API (core.h).
var (
	communicators = newHandleTable[*core.Communicator]("communicator")
	futures       = newHandleTable[*future]("future")
)

// futureKind is what a future's operation produces.
type futureKind int

const (
	futureConnection futureKind = iota // Future[*core.Connection]
	futureSemaphore                    // Future[*core.Semaphore]
	futureMemory                       // Future[core.RegisteredMemory]
	futureNone                         // Future[struct{}]
)

func (k futureKind) String() string {
	return [...]string{"a connection", "a semaphore", "a registered memory", "no result"}[k]
}

// future is one of core's Future types behind a mscclppFuture_t.
type future struct {
	kind  futureKind
	get   func(ctx context.Context) (any, error)
	mu    sync.Mutex
	taken bool // the result was handed out as a handle
}

func newFuture[T any](kind futureKind, f core.Future[T]) *future {
	return &future{kind: kind, get: func(ctx context.Context) (any, error) { return f.Get(ctx) }}
}

// The Go futures end by themselves within the bootstrap timeout; waits need no deadline.
func (f *future) wait() (any, error) { return f.get(context.Background()) }

// take waits for a future of the given kind and hands its result to register, once.
func takeFuture(h C.mscclppFuture_t, kind futureKind, register func(v any)) error {
	f, err := futures.lookup(unsafe.Pointer(h))
	if err != nil {
		return err
	}
	if f.kind != kind {
		return invalidUsage("future %p produces %v, not %v", unsafe.Pointer(h), f.kind, kind)
	}
	v, err := f.wait()
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.taken {
		return invalidUsage("the result of future %p was already handed out", unsafe.Pointer(h))
	}
	f.taken = true
	register(v)
	return nil
}

//export mscclppCommunicatorCreate
func mscclppCommunicatorCreate(b C.mscclppBootstrap_t, ctx C.mscclppContext_t, comm *C.mscclppCommunicator_t) C.mscclppResult_t {
	return call("mscclppCommunicatorCreate", func() error {
		if comm == nil {
			return invalidArg("communicator is NULL")
		}
		*comm = nil
		t, err := bootstraps.lookup(unsafe.Pointer(b))
		if err != nil {
			return err
		}
		c, err := contexts.lookup(unsafe.Pointer(ctx))
		if err != nil {
			return err
		}
		*comm = C.mscclppCommunicator_t(communicators.register(core.NewCommunicator(t, c)))
		return nil
	})
}

//export mscclppCommunicatorDestroy
func mscclppCommunicatorDestroy(comm C.mscclppCommunicator_t) C.mscclppResult_t {
	return call("mscclppCommunicatorDestroy", func() error {
		// The communicator owns nothing: its bootstrap and context are the caller's, and its
		// pending operations end by themselves.
		_, err := communicators.release(unsafe.Pointer(comm))
		return err
	})
}

// communicatorCall is the common part of the exports that start an operation of a communicator:
// the checks, and the registration of the future that start returns.
func communicatorCall(comm C.mscclppCommunicator_t, out *C.mscclppFuture_t,
	start func(c *core.Communicator) (*future, error)) error {
	if out == nil {
		return invalidArg("future is NULL")
	}
	*out = nil
	c, err := communicators.lookup(unsafe.Pointer(comm))
	if err != nil {
		return err
	}
	f, err := start(c)
	if err != nil {
		return err
	}
	*out = C.mscclppFuture_t(futures.register(f))
	return nil
}

//export mscclppCommunicatorConnect
func mscclppCommunicatorConnect(comm C.mscclppCommunicator_t, transport C.mscclppTransport_t, deviceID C.int,
	remoteRank, tag C.int, out *C.mscclppFuture_t) C.mscclppResult_t {
	return call("mscclppCommunicatorConnect", func() error {
		return communicatorCall(comm, out, func(c *core.Communicator) (*future, error) {
			cfg := core.EndpointConfig{
				Transport: core.Transport(transport),
				Device:    core.Device{Type: core.DeviceGPU, ID: int(deviceID)},
			}
			if deviceID == C.MSCCLPP_DEVICE_ID_CPU {
				cfg.Device = core.Device{Type: core.DeviceCPU}
			}
			return newFuture(futureConnection, c.Connect(cfg, int(remoteRank), int(tag))), nil
		})
	})
}

//export mscclppCommunicatorBuildSemaphore
func mscclppCommunicatorBuildSemaphore(comm C.mscclppCommunicator_t, conn C.mscclppConnection_t,
	remoteRank, tag C.int, out *C.mscclppFuture_t) C.mscclppResult_t {
	return call("mscclppCommunicatorBuildSemaphore", func() error {
		return communicatorCall(comm, out, func(c *core.Communicator) (*future, error) {
			cn, err := connections.lookup(unsafe.Pointer(conn))
			if err != nil {
				return nil, err
			}
			return newFuture(futureSemaphore, c.BuildSemaphore(cn, int(remoteRank), int(tag))), nil
		})
	})
}

//export mscclppCommunicatorSendMemory
func mscclppCommunicatorSendMemory(comm C.mscclppCommunicator_t, mem C.mscclppRegMem_t,
	remoteRank, tag C.int, out *C.mscclppFuture_t) C.mscclppResult_t {
	return call("mscclppCommunicatorSendMemory", func() error {
		return communicatorCall(comm, out, func(c *core.Communicator) (*future, error) {
			m, err := memories.lookup(unsafe.Pointer(mem))
			if err != nil {
				return nil, err
			}
			return newFuture(futureNone, c.SendMemory(m, int(remoteRank), int(tag))), nil
		})
	})
}

//export mscclppCommunicatorRecvMemory
func mscclppCommunicatorRecvMemory(comm C.mscclppCommunicator_t, remoteRank, tag C.int,
	out *C.mscclppFuture_t) C.mscclppResult_t {
	return call("mscclppCommunicatorRecvMemory", func() error {
		return communicatorCall(comm, out, func(c *core.Communicator) (*future, error) {
			return newFuture(futureMemory, c.RecvMemory(int(remoteRank), int(tag))), nil
		})
	})
}

//export mscclppFutureWait
func mscclppFutureWait(h C.mscclppFuture_t) C.mscclppResult_t {
	return call("mscclppFutureWait", func() error {
		f, err := futures.lookup(unsafe.Pointer(h))
		if err != nil {
			return err
		}
		_, err = f.wait()
		return err
	})
}

//export mscclppFutureGetConnection
func mscclppFutureGetConnection(h C.mscclppFuture_t, conn *C.mscclppConnection_t) C.mscclppResult_t {
	return call("mscclppFutureGetConnection", func() error {
		if conn == nil {
			return invalidArg("connection is NULL")
		}
		*conn = nil
		return takeFuture(h, futureConnection, func(v any) {
			*conn = C.mscclppConnection_t(connections.register(v.(*core.Connection)))
		})
	})
}

//export mscclppFutureGetSemaphore
func mscclppFutureGetSemaphore(h C.mscclppFuture_t, sema *C.mscclppSemaphore_t) C.mscclppResult_t {
	return call("mscclppFutureGetSemaphore", func() error {
		if sema == nil {
			return invalidArg("semaphore is NULL")
		}
		*sema = nil
		return takeFuture(h, futureSemaphore, func(v any) {
			*sema = C.mscclppSemaphore_t(semaphores.register(v.(*core.Semaphore)))
		})
	})
}

//export mscclppFutureGetMemory
func mscclppFutureGetMemory(h C.mscclppFuture_t, mem *C.mscclppRegMem_t) C.mscclppResult_t {
	return call("mscclppFutureGetMemory", func() error {
		if mem == nil {
			return invalidArg("memory is NULL")
		}
		*mem = nil
		return takeFuture(h, futureMemory, func(v any) {
			*mem = C.mscclppRegMem_t(memories.register(v.(core.RegisteredMemory)))
		})
	})
}

//export mscclppFutureDestroy
func mscclppFutureDestroy(h C.mscclppFuture_t) C.mscclppResult_t {
	return call("mscclppFutureDestroy", func() error {
		// The operation goes on to its end (bounded by the bootstrap timeout); its result, if
		// not handed out, is dropped.
		_, err := futures.release(unsafe.Pointer(h))
		return err
	})
}
