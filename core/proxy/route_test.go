package proxy

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recordingRoute is a Route that records its calls, standing in for a network connection's.
type recordingRoute struct {
	mu    sync.Mutex
	calls []string
}

func (r *recordingRoute) record(s string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, s)
	return nil
}

func (r *recordingRoute) Put(dst, src, n uint64) error {
	return r.record(fmt.Sprintf("put %d<-%d %d", dst, src, n))
}
func (r *recordingRoute) Signal(v uint64) error { return r.record(fmt.Sprintf("signal %d", v)) }
func (r *recordingRoute) Drain() error          { return r.record("drain") }

func (r *recordingRoute) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// TestRoute: a connection with a Route (a peer over the network, whose memory is not mapped)
// gets its puts and signals, in trigger order, through the route and not the engine; a flush
// drains the route too; a put past the connection's buffers is refused before the route sees it,
// and the connection is failed (its later triggers are refused as well).
func TestRoute(t *testing.T) {
	r := newRig(t, rigOptions{conns: 2, noStart: true})
	route := &recordingRoute{}
	require.NoError(t, r.proxy.SetConn(1, Conn{LocalSize: 4096, RemoteSize: 8192, SignalID: 1, Peer: 5, Tag: 1, Route: route}))
	require.NoError(t, r.proxy.Start())

	dev := r.devConn(1)
	dev.localSignalEpochID = make([]uint64, 2)
	dev.putWithSignal(100, 8, 64)
	dev.put(4096, 0, 4096)
	dev.signal()
	dev.flush()
	assert.Equal(t, []string{"put 100<-8 64", "signal 1", "put 4096<-0 4096", "signal 2", "drain"}, route.recorded())
	assert.Equal(t, make([]byte, len(r.ends[1].remote)), r.ends[1].remote, "the engine moved nothing for the routed connection")

	dev.put(8192, 0, 1) // past the peer's 8192 bytes
	dev.flush()         // refused too: the connection has failed
	assert.Len(t, route.recorded(), 5, "nothing more reached the route")
	assert.True(t, r.proxy.Failed(1))
	assert.ErrorIs(t, r.proxy.ConnErr(1), ErrOutOfRange)

	assert.ErrorIs(t, (&Conn{Route: route, SignalID: MaxSignalID + 1}).check(0), ErrConfig)
}
