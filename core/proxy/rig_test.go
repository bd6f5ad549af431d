package proxy

import (
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// endpoint is one connection of the rank under test together with the peer's side of it.
type endpoint struct {
	id         int
	localAddr  uint64
	local      []byte // this rank's registered buffer: the source of puts
	remoteAddr uint64
	remote     []byte // the peer's registered buffer: the destination of puts

	localSignalAddr uint64
	peerSignalAddr  uint64

	dev  *testDevConn // this rank's GPU side
	peer *testDevConn // the peer's GPU side, for wait()
}

// rig is a proxy over host memory with a test device.
type rig struct {
	t      *testing.T
	mem    *hostMemory
	engine *hostEngine
	slots  []fifo.Trigger
	head   atomic.Uint64
	proxy  *Proxy
	ends   []*endpoint
	logs   *testutil.LogBuffer
}

type rigOptions struct {
	conns      int
	bufSize    int
	slowCopy   bool
	signalLag  time.Duration // the engine pauses this long after each write into a signal word
	tracing    bool
	idleSpin   time.Duration
	initThread func() error
	wrapEngine func(*hostEngine) Engine // when set, the proxy gets this wrapper of the host engine
	noStart    bool
}

func newRig(t *testing.T, o rigOptions) *rig {
	t.Helper()
	if o.conns == 0 {
		o.conns = 1
	}
	if o.bufSize == 0 {
		o.bufSize = 1 << 16
	}
	r := &rig{t: t, mem: newHostMemory(), slots: AlignedSlots(fifo.FifoSize), logs: &testutil.LogBuffer{}}
	r.engine = newHostEngine(r.mem)
	r.engine.slowCopy = o.slowCopy
	r.engine.signalLag = o.signalLag
	r.engine.tracing = o.tracing
	conns := make([]Conn, o.conns)
	for i := range o.conns {
		e := &endpoint{id: i}
		e.localAddr, e.local = r.mem.allocBytes(o.bufSize)
		e.remoteAddr, e.remote = r.mem.allocBytes(o.bufSize)
		var localSignal, peerSignal []uint64
		e.localSignalAddr, localSignal = r.mem.allocWords(2)
		e.peerSignalAddr, peerSignal = r.mem.allocWords(2)
		e.peer = &testDevConn{localSignalEpochID: peerSignal}
		conns[i] = Conn{
			LocalBuf: e.localAddr, LocalSize: uint64(o.bufSize),
			RemoteBuf: e.remoteAddr, RemoteSize: uint64(o.bufSize),
			RemoteSignal: e.peerSignalAddr + epochProxy*wordSize,
			SignalID:     i,
			Peer:         i + 1, Tag: 10 + i,
		}
		e.dev = r.devConn(i)
		e.dev.localSignalEpochID = localSignal
		r.ends = append(r.ends, e)
	}
	var engine Engine = r.engine
	if o.wrapEngine != nil {
		engine = o.wrapEngine(r.engine)
	}
	p, err := New(Config{
		Slots: r.slots, Conns: conns, Engine: engine, InitThread: o.initThread,
		Logger:   r.logs.Logger(slog.LevelDebug),
		IdleSpin: o.idleSpin,
	})
	require.NoError(t, err)
	r.proxy = p
	t.Cleanup(func() {
		require.NoError(t, p.Stop())
		r.engine.close()
		require.NoError(t, r.engine.accessError(), "the proxy touched memory outside the registered regions")
		if t.Failed() {
			t.Logf("proxy log:\n%s", r.logs.String())
		}
	})
	if !o.noStart {
		require.NoError(t, p.Start())
	}
	return r
}

// devConn returns a device connection (one GPU thread's view) with the given connection id,
// pushing into the rig's ring.
func (r *rig) devConn(connID int) *testDevConn {
	c := &testDevConn{fifo: testFifo{
		triggerFifo:     r.slots,
		triggerFifoTail: &r.engine.published,
		triggerFifoHead: &r.head,
		connID:          uint64(connID),
	}}
	if connID < len(r.ends) {
		c.localSignalEpochID = r.ends[connID].dev.localSignalEpochID
	}
	return c
}

// pattern is the byte a test writes at offset i of round round on connection conn.
func pattern(conn, round, i int) byte { return byte(conn*131 + round*31 + i*7 + i>>8) }
