package proxy

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// fillRound writes round's pattern into local[off:off+n] of end e.
func fillRound(e *endpoint, round int, off, n int) {
	for i := off; i < off+n; i++ {
		e.local[i] = pattern(e.id, round, i)
	}
}

// requireRound checks that remote[dst:dst+n] holds round's pattern of local[src:src+n].
func requireRound(t *testing.T, e *endpoint, round int, dst, src, n int) {
	t.Helper()
	for i := range n {
		if got, want := e.remote[dst+i], pattern(e.id, round, src+i); got != want {
			t.Fatalf("conn %d round %d: remote[%d] = %#x, want %#x (from local[%d])", e.id, round, dst+i, got, want, src+i)
		}
	}
}

func TestWrapAround(t *testing.T) {
	const (
		chunk   = 64
		bufSize = 1 << 16
		chunks  = bufSize / chunk
		rounds  = 11 // 11 * 1024 puts + 11 flushes > 10,000 triggers, ~88 laps of the ring
	)
	r := newRig(t, rigOptions{bufSize: bufSize})
	e := r.ends[0]
	for round := range rounds {
		fillRound(e, round, 0, bufSize)
		for c := range chunks {
			// Reverse the chunk order at the destination so source and destination offsets differ.
			e.dev.put(uint64((chunks-1-c)*chunk), uint64(c*chunk), chunk)
		}
		e.dev.flush()
		for c := range chunks {
			requireRound(t, e, round, (chunks-1-c)*chunk, c*chunk, chunk)
		}
	}
	st := r.proxy.Stats()
	assert.Equal(t, uint64(rounds*(chunks+1)), st.Tail)
	assert.Equal(t, st.Tail, st.Executed)
	assert.Zero(t, st.Refused)
	assert.NoError(t, r.proxy.Err())
}

func TestConcurrentProducers(t *testing.T) {
	const (
		conns       = 2
		perConn     = 2 // producers sharing a connection write disjoint halves
		bufSize     = 1 << 14
		half        = bufSize / perConn
		rounds      = 8
		minChunk    = 1
		chunkStride = 97 // odd sizes and offsets: no alignment the proxy could rely on
	)
	r := newRig(t, rigOptions{conns: conns, bufSize: bufSize, slowCopy: true})
	var wg sync.WaitGroup
	for _, e := range r.ends {
		for part := range perConn {
			dev := r.devConn(e.id)
			wg.Go(func() {
				base := part * half
				for round := range rounds {
					fillRound(e, round, base, half)
					// Cover the half with chunks of varying size, written shifted by `shift` (mod half).
					shift := (round*chunkStride + 13) % half
					for off := 0; off < half; {
						n := min(minChunk+(off*7+round)%chunkStride, half-off, half-(off+shift)%half)
						dst := base + (off+shift)%half
						dev.put(uint64(dst), uint64(base+off), uint64(n))
						off += n
					}
					dev.flush()
					for off := range half {
						dst := base + (off+shift)%half
						if got, want := e.remote[dst], pattern(e.id, round, base+off); got != want {
							t.Errorf("conn %d part %d round %d: remote[%d] = %#x, want %#x", e.id, part, round, dst, got, want)
							return
						}
					}
				}
			})
		}
	}
	wg.Wait()
	assert.NoError(t, r.proxy.Err())
	assert.Zero(t, r.proxy.Stats().Refused)
}

// TestFlushWaitsForCopies checks that a Sync trigger's slot is released only after every copy
// enqueued before it has completed: the engine's worker is slow, so a proxy that released first
// would let flush() return with copies outstanding.
func TestFlushWaitsForCopies(t *testing.T) {
	const (
		chunk  = 256
		puts   = 32
		rounds = 40
	)
	r := newRig(t, rigOptions{bufSize: chunk * puts, slowCopy: true})
	e := r.ends[0]
	for round := range rounds {
		fillRound(e, round, 0, chunk*puts)
		for c := range puts - 1 {
			e.dev.put(uint64(c*chunk), uint64(c*chunk), chunk)
		}
		last := (puts - 1) * chunk
		if round%2 == 0 {
			e.dev.put(uint64(last), uint64(last), chunk)
			e.dev.flush()
		} else {
			e.dev.putWithSignalAndFlush(uint64(last), uint64(last), chunk)
		}
		enqueued, completed := r.engine.enqueued.Load(), r.engine.completed.Load()
		require.Equal(t, enqueued, completed, "round %d: flush returned with copies outstanding", round)
		requireRound(t, e, round, 0, 0, chunk*puts)
	}
}

// TestSignalOrdering checks that a signal reaches the peer only after the data it announces:
// in the engine's queue the flag copy follows the data copy of the same trigger, and the peer's
// wait() never returns before the data is visible.
func TestSignalOrdering(t *testing.T) {
	const (
		chunk  = 512
		rounds = 64
	)
	r := newRig(t, rigOptions{bufSize: chunk * rounds, slowCopy: true, tracing: true})
	e := r.ends[0]
	ack := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // the peer
		for round := range rounds {
			e.peer.wait()
			requireRoundNoFatal(t, e, round, round*chunk, round*chunk, chunk)
			ack <- struct{}{}
		}
	})
	for round := range rounds {
		off := uint64(round * chunk)
		fillRound(e, round, int(off), chunk)
		if round%2 == 0 {
			e.dev.putWithSignal(off, off, chunk)
		} else {
			e.dev.put(off, off, chunk)
			e.dev.signal()
		}
		<-ack // one signal in flight at a time: the epoch the proxy copies is this round's
	}
	wg.Wait()
	e.dev.flush()

	trace := r.engine.traced()
	flagDst := e.peerSignalAddr + epochProxy*wordSize
	flags := 0
	for i, rec := range trace {
		if rec.dst != flagDst {
			continue
		}
		flags++
		require.Positive(t, i, "a flag copy came first")
		prev := trace[i-1]
		round := flags - 1
		assert.Equal(t, copyRecord{dst: e.remoteAddr + uint64(round*chunk), src: e.localAddr + uint64(round*chunk), n: chunk}, prev,
			"round %d: the copy before the flag copy is not the round's data", round)
		assert.Equal(t, copyRecord{dst: flagDst, n: wordSize, value: uint64(flags)}, rec, "the n-th signal writes epoch n")
	}
	assert.Equal(t, rounds, flags)
	assert.Equal(t, uint64(rounds), atomic.LoadUint64(&e.peer.localSignalEpochID[epochProxy]))
}

// TestAddConns grows the table of a stopped proxy; the new connection works, the old one's
// signal count carries on, and a running proxy refuses.
func TestAddConns(t *testing.T) {
	r := newRig(t, rigOptions{conns: 2, bufSize: 64})
	first, second := r.ends[0], r.ends[1]
	p := r.proxy
	full := p.conns[1]
	require.NoError(t, p.Stop())
	p.conns, p.signals, p.connErrs = p.conns[:1], p.signals[:1], p.connErrs[:1] // as if only the first existed
	require.NoError(t, p.Start())
	first.dev.signal()
	first.peer.wait()
	assert.ErrorIs(t, p.AddConns(full), ErrRunning)

	require.NoError(t, p.Stop())
	require.NoError(t, p.AddConns(full))
	require.NoError(t, p.Start())
	fillRound(second, 0, 0, 64)
	second.dev.putWithSignal(0, 0, 64)
	second.peer.wait()
	requireRound(t, second, 0, 0, 0, 64)
	first.dev.signal()
	first.peer.wait()
	assert.Equal(t, uint64(2), atomic.LoadUint64(&first.peer.localSignalEpochID[epochProxy]), "the first connection's count went on")
}

// TestSetConn replaces an entry of a stopped proxy's table: a connection without memory refuses
// a put (and is failed), the same id bound to a buffer then carries it, and a running proxy or
// an id outside the table is refused.
func TestSetConn(t *testing.T) {
	r := newRig(t, rigOptions{conns: 2, bufSize: 64})
	p, e := r.proxy, r.ends[1]
	bound := p.conns[1]
	empty := bound
	empty.LocalBuf, empty.LocalSize, empty.RemoteBuf, empty.RemoteSize = 0, 0, 0, 0
	require.NoError(t, p.Stop())
	require.NoError(t, p.SetConn(1, empty))
	require.NoError(t, p.Start())
	e.dev.put(0, 0, 64)
	e.dev.flush()
	assert.Equal(t, uint64(2), p.Stats().Refused, "a connection without memory refuses the put (and the flush after it)")
	assert.True(t, p.Failed(1))
	assert.ErrorIs(t, p.SetConn(1, bound), ErrRunning)

	require.NoError(t, p.Stop())
	assert.ErrorIs(t, p.SetConn(2, bound), ErrConfig)
	assert.ErrorIs(t, p.SetConn(-1, bound), ErrConfig)
	bad := bound
	bad.RemoteSignal = 0
	assert.ErrorIs(t, p.SetConn(1, bad), ErrConfig)
	require.NoError(t, p.SetConn(1, bound))
	assert.False(t, p.Failed(1), "a replaced connection is healthy again")
	assert.NoError(t, p.ConnErr(1))
	require.NoError(t, p.Start())
	fillRound(e, 0, 0, 64)
	e.dev.putWithSignal(0, 0, 64)
	e.peer.wait()
	requireRound(t, e, 0, 0, 0, 64)
}

// TestSharedSignalID: connections that share a signal id (port channels on one semaphore) share
// its count, so the peer's wait counts signals from either.
func TestSharedSignalID(t *testing.T) {
	r := newRig(t, rigOptions{conns: 2, bufSize: 64, tracing: true})
	require.NoError(t, r.proxy.Stop())
	r.proxy.conns[1].SignalID = r.proxy.conns[0].SignalID
	r.proxy.conns[1].RemoteSignal = r.proxy.conns[0].RemoteSignal
	require.NoError(t, r.proxy.Start())
	first, second := r.ends[0], r.ends[1]
	first.dev.signal()
	second.dev.signal()
	first.dev.signal()
	first.dev.flush()
	second.dev.flush()
	var values []uint64
	for _, rec := range r.engine.traced() {
		if rec.src == 0 && rec.dst == first.peerSignalAddr+epochProxy*wordSize {
			values = append(values, rec.value)
		}
	}
	assert.Equal(t, []uint64{1, 2, 3}, values, "one count across both connections")
}

// TestSignalCarriesItsOwnEpoch has many signals in flight while the engine lags after each
// signal, so the device has bumped its epoch for later puts before earlier signals execute. Whatever epoch the peer sees,
// the data of every put up to that epoch must have landed. A proxy that copied the live device
// counter (instead of writing each signal's own epoch) fails here.
func TestSignalCarriesItsOwnEpoch(t *testing.T) {
	const (
		chunk  = 256
		rounds = 96 // less than the ring, so the device never waits for room
	)
	r := newRig(t, rigOptions{bufSize: chunk * rounds, signalLag: time.Millisecond})
	e := r.ends[0]
	for round := range rounds {
		fillRound(e, round, round*chunk, chunk)
	}
	var wg sync.WaitGroup
	wg.Go(func() { // the peer: checks every round up to each epoch it observes
		checked := 0
		deadline := time.Now().Add(10 * time.Second)
		for checked < rounds && time.Now().Before(deadline) {
			seen := int(atomic.LoadUint64(&e.peer.localSignalEpochID[epochProxy]))
			for ; checked < seen; checked++ {
				requireRoundNoFatal(t, e, checked, checked*chunk, checked*chunk, chunk)
			}
		}
		assert.Equal(t, rounds, checked, "the peer saw every signal")
	})
	for round := range rounds {
		off := uint64(round * chunk)
		e.dev.putWithSignal(off, off, chunk)
	}
	wg.Wait()
	e.dev.flush()
}

func requireRoundNoFatal(t *testing.T, e *endpoint, round, dst, src, n int) {
	for i := range n {
		if got, want := e.remote[dst+i], pattern(e.id, round, src+i); got != want {
			t.Errorf("round %d: the peer's wait() returned before the data landed: remote[%d] = %#x, want %#x", round, dst+i, got, want)
			return
		}
	}
}

func TestRefusals(t *testing.T) {
	const (
		bufSize   = 4096
		maxOffset = 1<<fifo.BitsOffset - 1
		maxSize   = 1<<fifo.BitsSize - 1
	)
	tests := []struct {
		name          string
		connID        int // the connection the bad trigger names
		dst, src, n   uint64
		failsConn     bool
		wantLogSubstr string
	}{
		{"unknown connection", 2, 0, 0, 8, false, reasonUnknownConnection},
		{"unknown connection, largest id", 1<<fifo.BitsConnID - 1, 0, 0, 8, false, reasonUnknownConnection},
		{"source past the local buffer", 0, 0, bufSize - 4, 8, true, reasonSourceRange},
		{"source offset at the end", 0, 0, bufSize, 1, true, reasonSourceRange},
		{"destination past the remote buffer", 0, bufSize - 4, 0, 8, true, reasonDestinationRange},
		{"size larger than the buffer", 0, 0, 0, bufSize + 1, true, reasonSourceRange},
		{"every field at its maximum", 0, maxOffset, maxOffset, maxSize, true, reasonSourceRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, rigOptions{conns: 2, bufSize: bufSize, tracing: true})
			bad := r.devConn(tt.connID)
			slot := bad.fifo.push(fifo.Data, tt.dst, tt.src, tt.n)
			bad.waitUntilConsumed(slot) // the slot is released: the GPU does not hang

			assert.Equal(t, tt.failsConn, r.proxy.Failed(0))
			assert.False(t, r.proxy.Failed(1), "another connection was failed")
			assert.Equal(t, uint64(1), r.proxy.Stats().Refused)
			if tt.failsConn {
				err := r.proxy.ConnErr(0)
				assert.ErrorIs(t, err, ErrOutOfRange)
				assert.ErrorIs(t, err, errs.ErrInvalidArgument)
				// A later, valid trigger of the failed connection is refused and released too.
				r.ends[0].dev.put(0, 0, 8)
				r.ends[0].dev.flush()
				assert.Equal(t, uint64(3), r.proxy.Stats().Refused)
			} else {
				assert.NoError(t, r.proxy.ConnErr(0))
			}
			logs := r.logs.String()
			assert.Contains(t, logs, "level=WARN")
			assert.Contains(t, logs, tt.wantLogSubstr)
			assert.Contains(t, logs, "raw ") // the decoded trigger and its words are logged

			// The other connection is unaffected.
			e := r.ends[1]
			fillRound(e, 0, 0, bufSize)
			e.dev.put(0, 0, bufSize)
			e.dev.flush()
			requireRound(t, e, 0, 0, 0, bufSize)
			assert.NoError(t, r.proxy.Err())

			// Nothing of connection 0 was copied.
			for _, rec := range r.engine.traced() {
				assert.NotEqual(t, r.ends[0].remoteAddr, rec.dst)
			}
			assert.Equal(t, make([]byte, bufSize), r.ends[0].remote)
			assert.Equal(t, uint64(1), r.engine.calls.Load(), "only connection 1's put reached the engine")
		})
	}
}

func TestFitsDoesNotOverflow(t *testing.T) {
	const maxU64 = ^uint64(0)
	tests := []struct {
		off, size, limit uint64
		want             bool
	}{
		{0, 0, 0, true},
		{0, 8, 8, true},
		{1, 8, 8, false},
		{8, 0, 8, true},
		{9, 0, 8, false},
		{maxU64, 1, 4096, false}, // offset+size wraps to 0
		{1, maxU64, 4096, false}, // offset+size wraps to 0
		{maxU64, maxU64, maxU64, false},
		{maxU64 - 8, 8, maxU64, true},
		{maxU64 - 7, 8, maxU64, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, fits(tt.off, tt.size, tt.limit), "fits(%#x, %#x, %#x)", tt.off, tt.size, tt.limit)
	}
}

func TestNewRefuses(t *testing.T) {
	good := Conn{LocalBuf: 0x1000, LocalSize: 64, RemoteBuf: 0x2000, RemoteSize: 64, RemoteSignal: 0x4008}
	withConn := func(edit func(*Conn)) []Conn {
		c := good
		edit(&c)
		return []Conn{good, c}
	}
	engine := &nopEngine{}
	tests := []struct {
		name string
		cfg  Config
	}{
		{"no slots", Config{Engine: engine}},
		{"slots not a power of two", Config{Slots: AlignedSlots(96), Engine: engine}},
		{"fewer slots than the flush counter", Config{Slots: AlignedSlots(fifo.FlushCounter / 2), Engine: engine}},
		{"misaligned slots", Config{Slots: misalignedSlots(fifo.FifoSize), Engine: engine}},
		{"no engine", Config{Slots: AlignedSlots(fifo.FifoSize)}},
		{"too many connections", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine, Conns: make([]Conn, 1<<fifo.BitsConnID+1)}},
		{"local buffer wraps around", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine,
			Conns: withConn(func(c *Conn) { c.LocalBuf, c.LocalSize = ^uint64(0)-16, 64 })}},
		{"remote buffer wraps around", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine,
			Conns: withConn(func(c *Conn) { c.RemoteBuf, c.RemoteSize = 1<<63, 1<<63 })}},
		{"buffer at address 0", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine,
			Conns: withConn(func(c *Conn) { c.LocalBuf = 0 })}},
		{"no signal address", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine,
			Conns: withConn(func(c *Conn) { c.RemoteSignal = 0 })}},
		{"negative signal id", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine,
			Conns: withConn(func(c *Conn) { c.SignalID = -1 })}},
		{"signal id too large", Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine,
			Conns: withConn(func(c *Conn) { c.SignalID = MaxSignalID + 1 })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			assert.Nil(t, p)
			assert.ErrorIs(t, err, ErrConfig)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	}
	p, err := New(Config{Slots: AlignedSlots(fifo.FifoSize), Engine: engine, Conns: []Conn{good}})
	require.NoError(t, err)
	require.NoError(t, p.Stop(), "Stop before Start")
}

func TestEngineError(t *testing.T) {
	const (
		chunk    = 16
		failAt   = 5
		triggers = 3 * fifo.FifoSize // several laps: released slots keep the producer going
	)
	r := newRig(t, rigOptions{bufSize: chunk * triggers})
	r.engine.failCopy.Store(failAt)
	e := r.ends[0]
	for i := range triggers {
		e.dev.put(uint64(i*chunk), uint64(i*chunk), chunk)
	}
	e.dev.flush() // returns: the Sync slot is released although nothing is executed any more

	err := r.proxy.Err()
	require.Error(t, err)
	assert.ErrorIs(t, err, errInjected)
	assert.Contains(t, err.Error(), "data copy")
	assert.Contains(t, err.Error(), "connection 0")
	st := r.proxy.Stats()
	assert.Equal(t, uint64(triggers+1), st.Tail)
	assert.Equal(t, uint64(failAt-1), st.Executed)
	assert.Equal(t, uint64(triggers+1-failAt), st.Skipped)
	assert.Equal(t, uint64(failAt), r.engine.calls.Load(), "the proxy called Copy after the failure")
	assert.Equal(t, uint64(failAt-1), r.engine.enqueued.Load())
	assert.Contains(t, r.logs.String(), "level=ERROR")
	assert.False(t, r.proxy.Failed(0), "an engine failure is not the connection's fault")
}

func TestStopRestart(t *testing.T) {
	const chunk = 32
	r := newRig(t, rigOptions{bufSize: chunk * 64, idleSpin: time.Millisecond})
	e := r.ends[0]
	fillRound(e, 0, 0, chunk*64)

	for i := range 10 {
		e.dev.put(uint64(i*chunk), uint64(i*chunk), chunk)
	}
	e.dev.flush()
	require.NoError(t, r.proxy.Stop())
	require.NoError(t, r.proxy.Stop(), "a second Stop")
	assert.Equal(t, uint64(11), r.proxy.Stats().Tail)

	// Triggers pushed while the proxy is stopped wait in the ring.
	for i := 10; i < 20; i++ {
		e.dev.put(uint64(i*chunk), uint64(i*chunk), chunk)
	}
	time.Sleep(10 * time.Millisecond)
	assert.Equal(t, uint64(11), r.proxy.Stats().Tail, "a stopped proxy consumed triggers")

	require.NoError(t, r.proxy.Start())
	require.NoError(t, r.proxy.Start(), "a second Start")
	e.dev.flush()
	requireRound(t, e, 0, 0, 0, 20*chunk)
	assert.Equal(t, uint64(22), r.proxy.Stats().Tail)

	// Stop on an idle ring, after the loop has begun to nap, returns promptly.
	time.Sleep(20 * time.Millisecond)
	const prompt = 500 * time.Millisecond // generous: loaded CI machines with -race
	start := time.Now()
	require.NoError(t, r.proxy.Stop())
	assert.Less(t, time.Since(start), prompt)

	for range 3 { // repeated cycles leave no goroutine behind (TestMain runs goleak)
		require.NoError(t, r.proxy.Start())
		e.dev.flush()
		require.NoError(t, r.proxy.Stop())
	}
	assert.Equal(t, uint64(25), r.proxy.Stats().Tail)
}

func TestStopWhileTriggersFlow(t *testing.T) {
	const chunk = 8
	r := newRig(t, rigOptions{bufSize: chunk * 1024})
	e := r.ends[0]
	var pushed atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1024 {
			e.dev.put(uint64(i*chunk), uint64(i*chunk), chunk)
			pushed.Add(1)
		}
	}()
	for pushed.Load() < 64 {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, r.proxy.Stop())
	require.NoError(t, r.proxy.Start()) // the producer may be blocked on a full ring until now
	<-done
	e.dev.flush()
	assert.Equal(t, uint64(1025), r.proxy.Stats().Tail)
	assert.Equal(t, r.engine.enqueued.Load(), r.engine.completed.Load())
}

func TestTailPublication(t *testing.T) {
	r := newRig(t, rigOptions{noStart: true})
	var (
		mu        sync.Mutex
		published []uint64
		hostTails []uint64
	)
	r.engine.onPublish = func(tail uint64) {
		mu.Lock()
		defer mu.Unlock()
		published = append(published, tail)
		hostTails = append(hostTails, r.proxy.Stats().Tail)
	}
	require.NoError(t, r.proxy.Start())
	e := r.ends[0]
	const triggers = 50*fifo.FlushCounter + 3
	for range triggers - 1 {
		e.dev.signal()
	}
	e.dev.flush()
	require.NoError(t, r.proxy.Stop())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, published, triggers/fifo.FlushCounter)
	for i, tail := range published {
		assert.Equal(t, uint64((i+1)*fifo.FlushCounter), tail, "publication %d", i)
		assert.Equal(t, hostTails[i], tail, "publication %d: published tail differs from the host tail", i)
	}
	assert.Equal(t, uint64(triggers/fifo.FlushCounter*fifo.FlushCounter), r.engine.published.Load())
	assert.Equal(t, r.engine.published.Load(), r.proxy.Stats().PublishedTail)
	assert.Equal(t, uint64(triggers), r.proxy.Stats().Tail)
}

// initCheckEngine records whether any engine call came before InitThread had run.
type initCheckEngine struct {
	Engine
	initDone      *atomic.Bool
	callsTooEarly atomic.Uint64
}

func (e *initCheckEngine) check() {
	if !e.initDone.Load() {
		e.callsTooEarly.Add(1)
	}
}
func (e *initCheckEngine) Copy(dst, src, n uint64) error {
	e.check()
	return e.Engine.Copy(dst, src, n)
}
func (e *initCheckEngine) WriteValue(d, v uint64) error { e.check(); return e.Engine.WriteValue(d, v) }
func (e *initCheckEngine) Drain() error                 { e.check(); return e.Engine.Drain() }
func (e *initCheckEngine) PublishTail(t uint64) error   { e.check(); return e.Engine.PublishTail(t) }

func TestInitThread(t *testing.T) {
	var (
		initDone atomic.Bool
		failInit atomic.Bool
		inits    atomic.Uint64
		wrapped  *initCheckEngine
	)
	errNoContext := errors.New("no CUDA context")
	failInit.Store(true)
	r := newRig(t, rigOptions{
		noStart: true,
		initThread: func() error {
			inits.Add(1)
			if failInit.Load() {
				return errNoContext
			}
			initDone.Store(true)
			return nil
		},
		wrapEngine: func(h *hostEngine) Engine {
			wrapped = &initCheckEngine{Engine: h, initDone: &initDone}
			return wrapped
		},
	})
	err := r.proxy.Start()
	assert.ErrorIs(t, err, ErrThreadInit)
	assert.ErrorIs(t, err, errNoContext)
	require.NoError(t, r.proxy.Stop(), "Stop after a failed Start")

	failInit.Store(false)
	require.NoError(t, r.proxy.Start())
	e := r.ends[0]
	for range 2 * fifo.FlushCounter {
		e.dev.putWithSignal(0, 0, 8)
	}
	e.dev.flush()
	require.NoError(t, r.proxy.Stop())
	require.NoError(t, r.proxy.Start())
	require.NoError(t, r.proxy.Stop())
	assert.Equal(t, uint64(3), inits.Load(), "InitThread runs at every Start")
	assert.Zero(t, wrapped.callsTooEarly.Load(), "an engine call came before InitThread")
}

// TestNoAllocationPerTrigger drives the loop's per-trigger step directly: it must not allocate,
// whatever the trigger asks for.
func TestNoAllocationPerTrigger(t *testing.T) {
	engine := &nopEngine{}
	slots := AlignedSlots(fifo.FifoSize)
	conn := Conn{LocalBuf: 0x1000, LocalSize: 1 << 20, RemoteBuf: 0x200000, RemoteSize: 1 << 20, RemoteSignal: 0x4008}
	p, err := New(Config{Slots: slots, Conns: []Conn{conn}, Engine: engine})
	require.NoError(t, err)
	types := []fifo.TriggerType{fifo.Data, fifo.Flag, fifo.Data | fifo.Flag, fifo.Sync, fifo.Data | fifo.Flag | fifo.Sync}
	var triggers []fifo.Trigger
	for i, typ := range types {
		tr, err := fifo.Encode(typ, uint64(i*64), uint64(i*128), 64, 0)
		require.NoError(t, err)
		triggers = append(triggers, tr)
	}
	n := 0
	allocs := testing.AllocsPerRun(1000, func() {
		slot := &slots[p.tail%fifo.FifoSize]
		*slot = triggers[n%len(triggers)]
		n++
		if !p.pollOnce() {
			t.Fatal("pollOnce saw an empty slot")
		}
	})
	assert.Zero(t, allocs)
	assert.Positive(t, engine.copies.Load())
	assert.Positive(t, engine.drains.Load())
	assert.Positive(t, engine.published.Load())
	assert.Zero(t, p.Stats().Refused)

	// The path taken after an engine failure does not allocate either.
	p.engineFailed = true
	allocs = testing.AllocsPerRun(100, func() {
		slots[p.tail%fifo.FifoSize] = triggers[0]
		p.pollOnce()
	})
	assert.Zero(t, allocs)
}

// BenchmarkProxyTrigger measures a running proxy with an engine that does nothing: the cost of
// the loop itself per trigger, producer included.
func BenchmarkProxyTrigger(b *testing.B) {
	engine := &nopEngine{}
	slots := AlignedSlots(fifo.FifoSize)
	conn := Conn{LocalBuf: 0x1000, LocalSize: 1 << 20, RemoteBuf: 0x200000, RemoteSize: 1 << 20, RemoteSignal: 0x4008}
	tail := &atomic.Uint64{}
	p, err := New(Config{Slots: slots, Conns: []Conn{conn}, Engine: tailEngine{engine, tail}})
	require.NoError(b, err)
	require.NoError(b, p.Start())
	defer func() { require.NoError(b, p.Stop()) }()
	var head atomic.Uint64
	dev := &testDevConn{
		fifo:               testFifo{triggerFifo: slots, triggerFifoTail: tail, triggerFifoHead: &head},
		localSignalEpochID: make([]uint64, 2),
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		dev.putWithSignal(0, 0, 64)
	}
	dev.flush()
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/trigger")
}

// tailEngine is a nopEngine whose PublishTail also feeds the benchmark device's tail.
type tailEngine struct {
	*nopEngine
	tail *atomic.Uint64
}

func (e tailEngine) PublishTail(t uint64) error { e.tail.Store(t); return e.nopEngine.PublishTail(t) }
