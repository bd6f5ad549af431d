package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// Why a trigger is refused, for logs.
const (
	reasonUnknownConnection = "connection id outside the table"
	reasonSourceRange       = "source range outside the local registered buffer"
	reasonDestinationRange  = "destination range outside the remote registered buffer"
	reasonConnectionFailed  = "connection failed by an earlier refused trigger"
)

// run is the loop goroutine. It never unlocks its OS thread, so the thread, which InitThread may
// have bound to a CUDA context and a CPU set, exits with the goroutine instead of returning to
// the Go scheduler's pool.
func (p *Proxy) run(initErr chan<- error) {
	defer close(p.done)
	runtime.LockOSThread()
	if p.initThread != nil {
		if err := p.initThread(); err != nil {
			err = fmt.Errorf("%w: %w", ErrThreadInit, err)
			p.log.Warn("proxy: not started", "err", err)
			initErr <- err
			return
		}
	}
	initErr <- nil
	p.log.Info("proxy: started", "tail", p.tail, "slots", len(p.slots), "connections", len(p.conns))

	var idleSince time.Time // zero while triggers flow
	for {
		busy := false
		for range pollBatch {
			if p.pollOnce() {
				busy = true
			} else {
				cpuRelax()
			}
		}
		if p.stopRequested.Load() {
			break
		}
		if busy || p.idleSpin < 0 {
			idleSince = time.Time{}
			continue
		}
		// Only a batch without any trigger reaches the clock: flowing triggers never nap.
		now := time.Now()
		switch {
		case idleSince.IsZero():
			idleSince = now
		case now.Sub(idleSince) >= p.idleSpin:
			time.Sleep(p.idleSleep)
		}
	}

	p.finalDrainErr = nil
	if !p.engineFailed {
		if err := p.drainAll(); err != nil {
			p.finalDrainErr = p.failEngine("draining the copy queue at stop", -1, fifo.Trigger{}, err)
		}
	}
	st := p.Stats()
	p.log.Info("proxy: stopped", "tail", st.Tail, "executed", st.Executed, "refused", st.Refused, "skipped", st.Skipped)
}

// pollOnce looks at the slot under the tail and, when it holds a trigger, handles and releases it.
// It reports whether there was a trigger. It does not allocate.
func (p *Proxy) pollOnce() bool {
	slot := &p.slots[p.tail&p.slotMask]
	lo, hi := loadTrigger(slot)
	if lo == 0 {
		return false
	}
	raceAcquire(slot)
	p.handle(fifo.Trigger{Value: [2]uint64{lo, hi}})

	// Count the trigger before releasing it, so whoever sees the slot released sees it counted.
	p.tail++
	p.stats.tail.Store(p.tail)
	// Release: value[1] first, then value[0], which a producer (push, or flush's
	// waitUntilConsumed) watches. Each store is atomic; the order is what matters.
	atomic.StoreUint64(&slot.Value[1], 0)
	atomic.StoreUint64(&slot.Value[0], 0)
	if p.tail%fifo.FlushCounter == 0 {
		p.publishTail()
	}
	return true
}

// handle checks a trigger and executes it: data copy, then the signal (the connection's signal
// count, written on the same ordered queue), then the drain. Nothing is executed for a refused trigger or after an engine failure.
func (p *Proxy) handle(t fifo.Trigger) {
	f := t.Decode()
	if f.ConnID >= len(p.conns) {
		p.refuseUnknownConnection(t, f)
		return
	}
	c := &p.conns[f.ConnID]
	if p.connFailed[f.ConnID].Load() {
		p.refuse(c, t, f, reasonConnectionFailed)
		return
	}
	if f.Type&fifo.Data != 0 {
		if !fits(f.SrcOffset, f.Size, c.LocalSize) {
			p.refuse(c, t, f, reasonSourceRange)
			return
		}
		if !fits(f.DstOffset, f.Size, c.RemoteSize) {
			p.refuse(c, t, f, reasonDestinationRange)
			return
		}
	}
	if p.engineFailed {
		p.stats.skipped.Add(1)
		return
	}
	if f.Type&fifo.Data != 0 && f.Size != 0 {
		var err error
		if c.Route != nil {
			err = c.Route.Put(f.DstOffset, f.SrcOffset, f.Size)
		} else {
			err = p.engine.Copy(c.RemoteBuf+f.DstOffset, c.LocalBuf+f.SrcOffset, f.Size)
		}
		if err != nil {
			p.failEngine("enqueueing the data copy", f.ConnID, t, err)
			return
		}
	}
	if f.Type&fifo.Flag != 0 {
		p.signals[c.SignalID]++
		var err error
		if c.Route != nil {
			err = c.Route.Signal(p.signals[c.SignalID])
		} else {
			err = p.engine.WriteValue(c.RemoteSignal, p.signals[c.SignalID])
		}
		if err != nil {
			p.failEngine("enqueueing the signal", f.ConnID, t, err)
			return
		}
	}
	if f.Type&fifo.Sync != 0 {
		if err := p.drainAll(); err != nil {
			p.failEngine("draining the copy queue", f.ConnID, t, err)
			return
		}
	}
	p.stats.executed.Add(1)
}

// drainAll drains the engine and every route of the table (p.routes): a flush covers every
// request of the ring, whichever connection queued it.
func (p *Proxy) drainAll() error {
	if err := p.engine.Drain(); err != nil {
		return err
	}
	for _, r := range p.routes {
		if err := r.Drain(); err != nil {
			return fmt.Errorf("route of connection %d (%s): %w", r.conn, &p.conns[r.conn], err)
		}
	}
	return nil
}

// publishTail hands the tail to the engine. After an engine failure it still tries, so GPU
// producers blocked on a full ring can go on, but its errors are no longer recorded.
func (p *Proxy) publishTail() {
	err := p.engine.PublishTail(p.tail)
	switch {
	case err == nil:
		p.stats.publishedTail.Store(p.tail)
	case p.engineFailed:
		p.log.Debug("proxy: publishing the tail after an engine failure", "tail", p.tail, "err", err)
	default:
		p.failEngine("publishing the tail", -1, fifo.Trigger{}, fmt.Errorf("tail %d: %w", p.tail, err))
	}
}

// failEngine records the first engine error and stops execution; connID is -1 when no trigger
// is involved. It returns the recorded (wrapped) error.
func (p *Proxy) failEngine(what string, connID int, t fifo.Trigger, err error) error {
	p.engineFailed = true
	var wrapped error
	if connID >= 0 {
		c := &p.conns[connID]
		wrapped = fmt.Errorf("proxy: %s for connection %d (%s), trigger %s: %w", what, connID, c, describe(t), err)
	} else {
		wrapped = fmt.Errorf("proxy: %s: %w", what, err)
	}
	p.errMu.Lock()
	if p.err == nil {
		p.err = wrapped
	}
	p.errMu.Unlock()
	p.log.Error("proxy: engine failed; releasing further triggers without executing them", "err", wrapped)
	return wrapped
}

// refuseUnknownConnection releases a trigger whose connId indexes no connection. The first one is
// logged at WARN, later ones at DEBUG so that a runaway kernel cannot flood the log.
func (p *Proxy) refuseUnknownConnection(t fifo.Trigger, f fifo.Fields) {
	p.stats.refused.Add(1)
	level := slog.LevelWarn
	if p.unknownConnectionSeen {
		level = slog.LevelDebug
	}
	p.unknownConnectionSeen = true
	p.log.Log(context.Background(), level, "proxy: refused trigger",
		"reason", reasonUnknownConnection, "connId", f.ConnID, "connections", len(p.conns), "trigger", describe(t))
}

// refuse releases a trigger of connection c without executing it and fails the connection. The
// refusal that fails the connection is logged at WARN, later ones at DEBUG.
func (p *Proxy) refuse(c *Conn, t fifo.Trigger, f fifo.Fields, reason string) {
	p.stats.refused.Add(1)
	id := f.ConnID
	if p.connFailed[id].Load() {
		p.log.Debug("proxy: refused trigger", "reason", reason, "connId", id, "conn", c.String(), "trigger", describe(t))
		return
	}
	err := fmt.Errorf("%w: connection %d (%s): %s: trigger %s (local %d bytes, remote %d bytes)",
		ErrOutOfRange, id, c, reason, describe(t), c.LocalSize, c.RemoteSize)
	p.errMu.Lock()
	p.connErrs[id] = err
	p.errMu.Unlock()
	p.connFailed[id].Store(true)
	p.log.Warn("proxy: refused trigger; connection failed", "reason", reason, "connId", id, "conn", c.String(),
		"trigger", describe(t), "localSize", c.LocalSize, "remoteSize", c.RemoteSize)
}

// describe formats a trigger's fields and raw words for logs and errors.
func describe(t fifo.Trigger) string {
	f := t.Decode()
	return fmt.Sprintf("{type %s, src %#x, dst %#x, size %#x, connId %d; raw %#016x %#016x}",
		f.Type, f.SrcOffset, f.DstOffset, f.Size, f.ConnID, t.Value[0], t.Value[1])
}
