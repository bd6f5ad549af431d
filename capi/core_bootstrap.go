package main

/*
#include "core_capi.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
)

// The bootstraps of the primitive API (core.h).
var bootstraps = newHandleTable[*bootstrap.TCP]("bootstrap")

//export mscclppBootstrapCreateUniqueId
func mscclppBootstrapCreateUniqueId(id *C.mscclppUniqueId) C.mscclppResult_t {
	return call("mscclppBootstrapCreateUniqueId", func() error {
		if id == nil {
			return invalidArg("id is NULL")
		}
		// The root serves the job in the background until every rank has joined or the
		// bootstrap timeout passes; it needs no handle.
		root, err := bootstrap.NewRoot(bootstrap.Options{})
		if err != nil {
			return err
		}
		goID := root.ID()
		C.memcpy(unsafe.Pointer(id), unsafe.Pointer(&goID[0]), C.size_t(len(goID)))
		return nil
	})
}

//export mscclppBootstrapCreateFromId
func mscclppBootstrapCreateFromId(b *C.mscclppBootstrap_t, rank, nranks C.int, id C.mscclppUniqueId) C.mscclppResult_t {
	return call("mscclppBootstrapCreateFromId", func() error {
		if b == nil {
			return invalidArg("bootstrap is NULL")
		}
		*b = nil
		if err := checkRanks(nranks, rank); err != nil {
			return err
		}
		var goID bootstrap.UniqueID
		C.memcpy(unsafe.Pointer(&goID[0]), unsafe.Pointer(&id.internal[0]), C.size_t(len(goID)))
		t, err := bootstrap.Join(context.Background(), goID, int(rank), int(nranks), bootstrap.Options{})
		if err != nil {
			return err
		}
		*b = C.mscclppBootstrap_t(bootstraps.register(t))
		return nil
	})
}

//export mscclppBootstrapCreate
func mscclppBootstrapCreate(b *C.mscclppBootstrap_t, rank, nranks C.int, ifIpPort *C.char) C.mscclppResult_t {
	return call("mscclppBootstrapCreate", func() error {
		if b == nil {
			return invalidArg("bootstrap is NULL")
		}
		*b = nil
		if ifIpPort == nil {
			return invalidArg("ifIpPort is NULL")
		}
		if err := checkRanks(nranks, rank); err != nil {
			return err
		}
		t, err := bootstrap.JoinAddr(context.Background(), C.GoString(ifIpPort), int(rank), int(nranks), bootstrap.Options{})
		if err != nil {
			return err
		}
		*b = C.mscclppBootstrap_t(bootstraps.register(t))
		return nil
	})
}

//export mscclppBootstrapRank
func mscclppBootstrapRank(b C.mscclppBootstrap_t, rank *C.int) C.mscclppResult_t {
	return bootstrapInt("mscclppBootstrapRank", b, rank, "rank", (*bootstrap.TCP).Rank)
}

//export mscclppBootstrapSize
func mscclppBootstrapSize(b C.mscclppBootstrap_t, nranks *C.int) C.mscclppResult_t {
	return bootstrapInt("mscclppBootstrapSize", b, nranks, "nranks", (*bootstrap.TCP).Size)
}

// bootstrapInt writes get of the bootstrap b to *out (named outName in the errors): the body of
// the integer accessors above.
func bootstrapInt(fn string, b C.mscclppBootstrap_t, out *C.int, outName string, get func(*bootstrap.TCP) int) C.mscclppResult_t {
	return call(fn, func() error {
		t, err := bootstraps.lookup(unsafe.Pointer(b))
		if err != nil {
			return err
		}
		if out == nil {
			return invalidArg(outName + " is NULL")
		}
		*out = C.int(get(t))
		return nil
	})
}

// checkMessageSize refuses a size above what one bootstrap message carries (SIZE_MAX included,
// which as a Go int is negative), before any slice of that size is made.
func checkMessageSize(size uint64) error {
	if size > bootstrap.MaxMessageBytes {
		return invalidArg("size is %d bytes, more than the %d a bootstrap message carries", size, bootstrap.MaxMessageBytes)
	}
	return nil
}

// cBytes is the C buffer (data, size) as a slice; nil when size is 0. size must have passed
// checkMessageSize (or be a multiple of such a size by a rank count).
func cBytes(data unsafe.Pointer, size C.size_t) ([]byte, error) {
	if size == 0 {
		return nil, nil
	}
	if data == nil {
		return nil, invalidArg("data is NULL but size is %d", size)
	}
	return unsafe.Slice((*byte)(data), int(size)), nil
}

//export mscclppBootstrapSend
func mscclppBootstrapSend(b C.mscclppBootstrap_t, data unsafe.Pointer, size C.size_t, peer, tag C.int) C.mscclppResult_t {
	return bootstrapBytes("mscclppBootstrapSend", b, data, size, func(t *bootstrap.TCP, buf []byte) error {
		return t.Send(context.Background(), int(peer), int(tag), buf)
	})
}

//export mscclppBootstrapRecv
func mscclppBootstrapRecv(b C.mscclppBootstrap_t, data unsafe.Pointer, size C.size_t, peer, tag C.int) C.mscclppResult_t {
	return bootstrapBytes("mscclppBootstrapRecv", b, data, size, func(t *bootstrap.TCP, buf []byte) error {
		if buf == nil {
			buf = []byte{}
		}
		return t.RecvInto(context.Background(), int(peer), int(tag), buf)
	})
}

// bootstrapBytes runs f with the bootstrap b and the C buffer (data, size) as a slice: the body of
// Send and Recv above.
func bootstrapBytes(fn string, b C.mscclppBootstrap_t, data unsafe.Pointer, size C.size_t,
	f func(t *bootstrap.TCP, buf []byte) error) C.mscclppResult_t {
	return call(fn, func() error {
		t, err := bootstraps.lookup(unsafe.Pointer(b))
		if err != nil {
			return err
		}
		if err := checkMessageSize(uint64(size)); err != nil {
			return err
		}
		buf, err := cBytes(data, size)
		if err != nil {
			return err
		}
		return f(t, buf)
	})
}

//export mscclppBootstrapAllGatherBytes
func mscclppBootstrapAllGatherBytes(b C.mscclppBootstrap_t, data unsafe.Pointer, size C.size_t) C.mscclppResult_t {
	return call("mscclppBootstrapAllGatherBytes", func() error {
		t, err := bootstraps.lookup(unsafe.Pointer(b))
		if err != nil {
			return err
		}
		if err := checkMessageSize(uint64(size)); err != nil {
			return err
		}
		buf, err := cBytes(data, size*C.size_t(t.Size()))
		if err != nil {
			return err
		}
		return t.AllGather(context.Background(), buf, int(size))
	})
}

//export mscclppBootstrapBarrierAll
func mscclppBootstrapBarrierAll(b C.mscclppBootstrap_t) C.mscclppResult_t {
	return call("mscclppBootstrapBarrierAll", func() error {
		t, err := bootstraps.lookup(unsafe.Pointer(b))
		if err != nil {
			return err
		}
		return t.Barrier(context.Background())
	})
}

//export mscclppBootstrapDestroy
func mscclppBootstrapDestroy(b C.mscclppBootstrap_t) C.mscclppResult_t {
	return call("mscclppBootstrapDestroy", func() error {
		t, err := bootstraps.release(unsafe.Pointer(b))
		if err != nil {
			return err
		}
		return t.Close()
	})
}
