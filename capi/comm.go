package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"
	"sync"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/legacy"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// comms holds the legacy communicators (a handleTable, like every handle of the C API; the C type
// struct mscclppComm has capiHandle's layout). legacyMu guards the per-communicator side tables
// (device-connection arrays, registrations) and is always taken before the table's own lock.
var (
	comms    = newHandleTable[*legacy.Comm]("communicator")
	legacyMu sync.Mutex
)

func registerComm(c *legacy.Comm) C.mscclppComm_t { return C.mscclppComm_t(comms.register(c)) }

func lookupComm(h C.mscclppComm_t) (*legacy.Comm, error) { return comms.lookup(unsafe.Pointer(h)) }

// unregisterComm releases the handle and drops its side tables.
func unregisterComm(h C.mscclppComm_t) (*legacy.Comm, error) {
	legacyMu.Lock()
	defer legacyMu.Unlock()
	c, err := comms.release(unsafe.Pointer(h))
	if err != nil {
		return nil, err
	}
	freeDeviceConnections(h)
	forgetRegistrations(h)
	return c, nil
}

func checkRanks(nranks, rank C.int) error {
	if nranks < 1 {
		return invalidArg("nranks is %d, want at least 1", nranks)
	}
	if rank < 0 || rank >= nranks {
		return invalidArg("rank %d is out of range [0, %d)", rank, nranks)
	}
	return nil
}

//export mscclppGetUniqueId
func mscclppGetUniqueId(uniqueID *C.mscclppUniqueId) C.mscclppResult_t {
	return call("mscclppGetUniqueId", func() error {
		if uniqueID == nil {
			return invalidArg("uniqueId is NULL")
		}
		// The root serves the job in the background until every rank has joined or the
		// bootstrap timeout passes; it needs no handle.
		root, err := bootstrap.NewRoot(bootstrap.Options{})
		if err != nil {
			return err
		}
		id := root.ID()
		C.memcpy(unsafe.Pointer(uniqueID), unsafe.Pointer(&id[0]), C.size_t(len(id)))
		return nil
	})
}

//export mscclppCommInitRank
func mscclppCommInitRank(comm *C.mscclppComm_t, nranks C.int, ipPortPair *C.char, rank C.int) C.mscclppResult_t {
	return call("mscclppCommInitRank", func() error {
		if comm == nil {
			return invalidArg("comm is NULL")
		}
		*comm = nil
		if ipPortPair == nil {
			return invalidArg("ipPortPair is NULL")
		}
		if err := checkRanks(nranks, rank); err != nil {
			return err
		}
		c, err := legacy.InitRank(context.Background(), int(nranks), C.GoString(ipPortPair), int(rank))
		if err != nil {
			return err
		}
		*comm = registerComm(c)
		return nil
	})
}

//export mscclppCommInitRankFromId
func mscclppCommInitRankFromId(comm *C.mscclppComm_t, nranks C.int, id C.mscclppUniqueId, rank C.int) C.mscclppResult_t {
	return call("mscclppCommInitRankFromId", func() error {
		if comm == nil {
			return invalidArg("comm is NULL")
		}
		*comm = nil
		if err := checkRanks(nranks, rank); err != nil {
			return err
		}
		var goID bootstrap.UniqueID
		C.memcpy(unsafe.Pointer(&goID[0]), unsafe.Pointer(&id.internal[0]), C.size_t(len(goID)))
		c, err := legacy.InitRankFromID(context.Background(), int(nranks), goID, int(rank))
		if err != nil {
			return err
		}
		*comm = registerComm(c)
		return nil
	})
}

//export mscclppBootstrapAllGather
func mscclppBootstrapAllGather(comm C.mscclppComm_t, data unsafe.Pointer, size C.int) C.mscclppResult_t {
	return callComm("mscclppBootstrapAllGather", comm, func(c *legacy.Comm) error {
		if size < 0 {
			return invalidArg("size is %d, want >= 0", size)
		}
		if err := checkMessageSize(uint64(size)); err != nil {
			return err
		}
		total := int(size) * c.Size()
		if data == nil && total > 0 {
			return invalidArg("data is NULL")
		}
		var buf []byte
		if total > 0 {
			buf = unsafe.Slice((*byte)(data), total)
		}
		return c.Bootstrap().AllGather(context.Background(), buf, int(size))
	})
}

//export mscclppBootstrapBarrier
func mscclppBootstrapBarrier(comm C.mscclppComm_t) C.mscclppResult_t {
	return callComm("mscclppBootstrapBarrier", comm, func(c *legacy.Comm) error {
		return c.Bootstrap().Barrier(context.Background())
	})
}

//export mscclppCommDestroy
func mscclppCommDestroy(comm C.mscclppComm_t) C.mscclppResult_t {
	return call("mscclppCommDestroy", func() error {
		c, err := unregisterComm(comm)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

//export mscclppCommRank
func mscclppCommRank(comm C.mscclppComm_t, rank *C.int) C.mscclppResult_t {
	return callComm("mscclppCommRank", comm, func(c *legacy.Comm) error {
		if rank == nil {
			return invalidArg("rank is NULL")
		}
		*rank = C.int(c.Rank())
		return nil
	})
}

//export mscclppCommSize
func mscclppCommSize(comm C.mscclppComm_t, size *C.int) C.mscclppResult_t {
	return callComm("mscclppCommSize", comm, func(c *legacy.Comm) error {
		if size == nil {
			return invalidArg("size is NULL")
		}
		*size = C.int(c.Size())
		return nil
	})
}

//export mscclppSetBootstrapConnTimeout
func mscclppSetBootstrapConnTimeout(timeout C.int) C.mscclppResult_t {
	return call("mscclppSetBootstrapConnTimeout", func() error {
		if maxSeconds := int64(config.MaxTimeout / time.Second); timeout <= 0 || int64(timeout) > maxSeconds {
			return invalidArg("timeout is %d s, want 1 to %d seconds", timeout, maxSeconds)
		}
		config.BootstrapTimeout.Set(time.Duration(timeout) * time.Second)
		return nil
	})
}
