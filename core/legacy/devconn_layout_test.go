package legacy

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

func TestSignalEpochIDLayout(t *testing.T) {
	var s SignalEpochID
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppDevConnSignalEpochId)", GoValue: uint64(unsafe.Sizeof(s))},
		{CName: "offsetof(mscclppDevConnSignalEpochId, device)", GoValue: uint64(unsafe.Offsetof(s.Device))},
		{CName: "offsetof(mscclppDevConnSignalEpochId, proxy)", GoValue: uint64(unsafe.Offsetof(s.Proxy))},
	})
	// Go cannot express alignas(16); see SignalEpochID.
	const signalEpochIDAlignC = 16
	if got, _ := abi.Lookup("alignof(mscclppDevConnSignalEpochId)"); got != signalEpochIDAlignC {
		t.Errorf("alignof(mscclppDevConnSignalEpochId) = %d in C, want %d", got, signalEpochIDAlignC)
	}
	if goAlign := uint64(unsafe.Alignof(s)); signalEpochIDAlignC%goAlign != 0 {
		t.Errorf("Go alignment %d of SignalEpochID does not divide the C alignment %d", goAlign, signalEpochIDAlignC)
	}
}

func TestBaseConnLayout(t *testing.T) {
	var b BaseConn
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppBaseConn)", GoValue: uint64(unsafe.Sizeof(b))},
		{CName: "alignof(mscclppBaseConn)", GoValue: uint64(unsafe.Alignof(b))},
		{CName: "offsetof(mscclppBaseConn, remoteRank)", GoValue: uint64(unsafe.Offsetof(b.RemoteRank))},
		{CName: "offsetof(mscclppBaseConn, tag)", GoValue: uint64(unsafe.Offsetof(b.Tag))},
		{CName: "offsetof(mscclppBaseConn, localBuff)", GoValue: uint64(unsafe.Offsetof(b.LocalBuff))},
		{CName: "offsetof(mscclppBaseConn, localSignalEpochId)", GoValue: uint64(unsafe.Offsetof(b.LocalSignalEpochID))},
		{CName: "offsetof(mscclppBaseConn, remoteSignalEpochId)", GoValue: uint64(unsafe.Offsetof(b.RemoteSignalEpochID))},
		{CName: "offsetof(mscclppBaseConn, waitEpochId)", GoValue: uint64(unsafe.Offsetof(b.WaitEpochID))},
		{CName: "offsetof(mscclppBaseConn, remoteBuff)", GoValue: uint64(unsafe.Offsetof(b.RemoteBuff))},
	})
}

func TestDevConnLayout(t *testing.T) {
	var d DevConn
	abi.CheckMirrors(t, []abi.Mirror{
		{CName: "sizeof(mscclppDevConn)", GoValue: uint64(unsafe.Sizeof(d))},
		{CName: "alignof(mscclppDevConn)", GoValue: uint64(unsafe.Alignof(d))},
		{CName: "offsetof(mscclppDevConn, remoteRank)", GoValue: uint64(unsafe.Offsetof(d.RemoteRank))},
		{CName: "offsetof(mscclppDevConn, tag)", GoValue: uint64(unsafe.Offsetof(d.Tag))},
		{CName: "offsetof(mscclppDevConn, localBuff)", GoValue: uint64(unsafe.Offsetof(d.LocalBuff))},
		{CName: "offsetof(mscclppDevConn, localSignalEpochId)", GoValue: uint64(unsafe.Offsetof(d.LocalSignalEpochID))},
		{CName: "offsetof(mscclppDevConn, remoteSignalEpochId)", GoValue: uint64(unsafe.Offsetof(d.RemoteSignalEpochID))},
		{CName: "offsetof(mscclppDevConn, waitEpochId)", GoValue: uint64(unsafe.Offsetof(d.WaitEpochID))},
		{CName: "offsetof(mscclppDevConn, remoteBuff)", GoValue: uint64(unsafe.Offsetof(d.RemoteBuff))},
		{CName: "offsetof(mscclppDevConn, fifo)", GoValue: uint64(unsafe.Offsetof(d.Fifo))},
	})
}

// TestLegacyLayoutTable prints every number internal/abi derives from the headers (go test -v).
func TestLegacyLayoutTable(t *testing.T) {
	var table strings.Builder
	for _, e := range abi.LegacyLayout() {
		fmt.Fprintf(&table, "\n%-56s %d", e.Name, e.Value)
	}
	t.Log(table.String())
}
