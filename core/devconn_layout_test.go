package core

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/abi"
)

// mirrorCase pairs a number of the C headers, named as internal/abi names it, with the Go value
// that must equal it.
type mirrorCase struct {
	cName   string
	goValue uint64
}

func checkMirror(t *testing.T, cases []mirrorCase) {
	t.Helper()
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-56s %8s %8s\n", "C", "C value", "Go value")
	for _, mc := range cases {
		cValue, ok := abi.Lookup(mc.cName)
		if !ok {
			t.Errorf("internal/abi has no entry %q", mc.cName)
			continue
		}
		fmt.Fprintf(&table, "%-56s %8d %8d\n", mc.cName, cValue, mc.goValue)
		if cValue != mc.goValue {
			t.Errorf("%s = %d in C, %d in Go", mc.cName, cValue, mc.goValue)
		}
	}
	t.Log(table.String())
}

func TestSignalEpochIDLayout(t *testing.T) {
	var s SignalEpochID
	checkMirror(t, []mirrorCase{
		{"sizeof(mscclppDevConnSignalEpochId)", uint64(unsafe.Sizeof(s))},
		{"offsetof(mscclppDevConnSignalEpochId, device)", uint64(unsafe.Offsetof(s.Device))},
		{"offsetof(mscclppDevConnSignalEpochId, proxy)", uint64(unsafe.Offsetof(s.Proxy))},
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
	checkMirror(t, []mirrorCase{
		{"sizeof(mscclppBaseConn)", uint64(unsafe.Sizeof(b))},
		{"alignof(mscclppBaseConn)", uint64(unsafe.Alignof(b))},
		{"offsetof(mscclppBaseConn, remoteRank)", uint64(unsafe.Offsetof(b.RemoteRank))},
		{"offsetof(mscclppBaseConn, tag)", uint64(unsafe.Offsetof(b.Tag))},
		{"offsetof(mscclppBaseConn, localBuff)", uint64(unsafe.Offsetof(b.LocalBuff))},
		{"offsetof(mscclppBaseConn, localSignalEpochId)", uint64(unsafe.Offsetof(b.LocalSignalEpochID))},
		{"offsetof(mscclppBaseConn, remoteSignalEpochId)", uint64(unsafe.Offsetof(b.RemoteSignalEpochID))},
		{"offsetof(mscclppBaseConn, waitEpochId)", uint64(unsafe.Offsetof(b.WaitEpochID))},
		{"offsetof(mscclppBaseConn, remoteBuff)", uint64(unsafe.Offsetof(b.RemoteBuff))},
	})
}

func TestDevConnLayout(t *testing.T) {
	var d DevConn
	checkMirror(t, []mirrorCase{
		{"sizeof(mscclppDevConn)", uint64(unsafe.Sizeof(d))},
		{"alignof(mscclppDevConn)", uint64(unsafe.Alignof(d))},
		{"offsetof(mscclppDevConn, remoteRank)", uint64(unsafe.Offsetof(d.RemoteRank))},
		{"offsetof(mscclppDevConn, tag)", uint64(unsafe.Offsetof(d.Tag))},
		{"offsetof(mscclppDevConn, localBuff)", uint64(unsafe.Offsetof(d.LocalBuff))},
		{"offsetof(mscclppDevConn, localSignalEpochId)", uint64(unsafe.Offsetof(d.LocalSignalEpochID))},
		{"offsetof(mscclppDevConn, remoteSignalEpochId)", uint64(unsafe.Offsetof(d.RemoteSignalEpochID))},
		{"offsetof(mscclppDevConn, waitEpochId)", uint64(unsafe.Offsetof(d.WaitEpochID))},
		{"offsetof(mscclppDevConn, remoteBuff)", uint64(unsafe.Offsetof(d.RemoteBuff))},
		{"offsetof(mscclppDevConn, fifo)", uint64(unsafe.Offsetof(d.Fifo))},
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
