package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/legacy"
)

// devConnBytes is sizeof(mscclppDevConn), through its Go mirror.
const devConnBytes = unsafe.Sizeof(legacy.DevConn{})

// devConnArrays holds, per communicator, the C arrays of device connections handed out. Each
// stays valid until the communicator is destroyed; a newer one is made only when a later
// mscclppConnectionSetup added connections.
var devConnArrays = struct {
	byHandle map[C.mscclppComm_t][]devConnArray
}{byHandle: map[C.mscclppComm_t][]devConnArray{}}

type devConnArray struct {
	ptr unsafe.Pointer // C memory, n * devConnBytes
	n   int
}

// deviceConnections returns the communicator's current C array of device connections. legacyMu
// is held by the caller.
func deviceConnections(h C.mscclppComm_t, c *legacy.Comm) (devConnArray, error) {
	conns, err := c.DevConns()
	if err != nil {
		return devConnArray{}, err
	}
	arrays := devConnArrays.byHandle[h]
	if k := len(arrays); k > 0 && arrays[k-1].n == len(conns) {
		return arrays[k-1], nil // connections only ever get appended
	}
	a := devConnArray{n: len(conns)}
	if len(conns) > 0 {
		a.ptr = C.calloc(C.size_t(len(conns)), C.size_t(devConnBytes))
		if a.ptr == nil {
			panic("calloc of the device connection array failed")
		}
		copy(unsafe.Slice((*legacy.DevConn)(a.ptr), len(conns)), conns)
	}
	devConnArrays.byHandle[h] = append(arrays, a)
	return a, nil
}

// freeDeviceConnections releases the arrays of a destroyed communicator. legacyMu is held.
func freeDeviceConnections(h C.mscclppComm_t) {
	for _, a := range devConnArrays.byHandle[h] {
		C.free(a.ptr)
	}
	delete(devConnArrays.byHandle, h)
}

//export mscclppConnect
func mscclppConnect(comm C.mscclppComm_t, remoteRank C.int, tag C.int, localBuff unsafe.Pointer,
	buffSize C.uint64_t, transportType C.mscclppTransport_t, ibDev *C.char) C.mscclppResult_t {
	return callComm("mscclppConnect", comm, func(c *legacy.Comm) error {
		if localBuff == nil {
			return invalidArg("localBuff is NULL")
		}
		if buffSize == 0 {
			return invalidArg("buffSize is 0")
		}
		transport := core.Transport(transportType)
		device := ""
		if ibDev != nil {
			device = C.GoString(ibDev)
		}
		if transport == core.TransportP2P && device != "" {
			c.Logger().Info("mscclppConnect: ibDev is ignored for the P2P transport", "ibDev", device)
		}
		return c.Connect(int(remoteRank), int(tag), cuda.DevicePtr(uintptr(localBuff)), uint64(buffSize), transport, device)
	})
}

//export mscclppConnectionSetup
func mscclppConnectionSetup(comm C.mscclppComm_t) C.mscclppResult_t {
	return callComm("mscclppConnectionSetup", comm, func(c *legacy.Comm) error {
		return c.ConnectionSetup(context.Background())
	})
}

//export mscclppGetAllDeviceConnections
func mscclppGetAllDeviceConnections(comm C.mscclppComm_t, devConns **C.mscclppDevConn_t, nConns *C.int) C.mscclppResult_t {
	return call("mscclppGetAllDeviceConnections", func() error {
		if devConns == nil || nConns == nil {
			return invalidArg("devConns or nConns is NULL")
		}
		legacyMu.Lock()
		defer legacyMu.Unlock()
		c, err := lookupComm(comm)
		if err != nil {
			return err
		}
		a, err := deviceConnections(comm, c)
		if err != nil {
			return err
		}
		*devConns = (*C.mscclppDevConn_t)(a.ptr)
		*nConns = C.int(a.n)
		return nil
	})
}

//export mscclppGetDeviceConnection
func mscclppGetDeviceConnection(comm C.mscclppComm_t, remoteRank C.int, tag C.int, devConn **C.mscclppDevConn_t) C.mscclppResult_t {
	return call("mscclppGetDeviceConnection", func() error {
		if devConn == nil {
			return invalidArg("devConn is NULL")
		}
		legacyMu.Lock()
		defer legacyMu.Unlock()
		c, err := lookupComm(comm)
		if err != nil {
			return err
		}
		i, err := c.DevConnIndex(int(remoteRank), int(tag))
		if err != nil {
			return err
		}
		a, err := deviceConnections(comm, c)
		if err != nil {
			return err
		}
		*devConn = (*C.mscclppDevConn_t)(unsafe.Add(a.ptr, uintptr(i)*devConnBytes))
		return nil
	})
}

//export mscclppProxyLaunch
func mscclppProxyLaunch(comm C.mscclppComm_t) C.mscclppResult_t {
	return callComm("mscclppProxyLaunch", comm, func(c *legacy.Comm) error {
		return c.ProxyLaunch()
	})
}

//export mscclppProxyStop
func mscclppProxyStop(comm C.mscclppComm_t) C.mscclppResult_t {
	return callComm("mscclppProxyStop", comm, func(c *legacy.Comm) error {
		return c.ProxyStop()
	})
}
