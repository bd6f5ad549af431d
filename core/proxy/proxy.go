package proxy

import (
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// Loop tuning.
const (
	// pollBatch is how many polls of the ring the loop makes between two looks at the stop flag
	// (and at the idle clock). A poll is a few nanoseconds when the ring is empty, so Stop is
	// noticed within microseconds; with triggers flowing, within pollBatch triggers.
	pollBatch = 256

	// DefaultIdleSpin is how long the loop busy-polls an empty ring before it starts to sleep
	// between batches of polls (Config.IdleSpin).
	DefaultIdleSpin = 10 * time.Millisecond

	// DefaultIdleSleep is the nap between batches of polls once the ring has been empty for the
	// idle spin time (Config.IdleSleep).
	DefaultIdleSleep = 50 * time.Microsecond
)

// Errors of this package. Engine errors are returned wrapped, keeping the engine's own class.
var (
	// ErrConfig: New was given an invalid configuration.
	ErrConfig = errs.New(errs.ErrInvalidArgument, "proxy: invalid configuration")
	// ErrUnknownConnection: a trigger named a connection id outside the table.
	ErrUnknownConnection = errs.New(errs.ErrInvalidArgument, "proxy: trigger names no connection")
	// ErrOutOfRange: a trigger asked to read or write outside the connection's registered memory.
	ErrOutOfRange = errs.New(errs.ErrInvalidArgument, "proxy: trigger outside registered memory")
	// ErrRunning: the call needs a stopped proxy.
	ErrRunning = errs.New(errs.ErrInvalidUsage, "proxy: running")
	// ErrThreadInit: Config.InitThread failed, so Start did not start the loop.
	ErrThreadInit = errs.New(errs.ErrInvalidUsage, "proxy: thread initialisation failed")
)

// Config describes one proxy.
type Config struct {
	// Slots is the trigger ring, shared by all connections of the rank. Its length must be a power
	// of two equal to the producers' MSCCLPP_PROXY_FIFO_SIZE (fifo.FifoSize for the legacy ABI),
	// slot 0 must be 16-byte aligned, and the memory must stay valid while the proxy runs. The
	// library builds it over cuMemHostAlloc'd memory; AlignedSlots makes one in Go memory.
	Slots []fifo.Trigger

	// Conns is the connection table; a trigger's connId indexes it. New copies it.
	Conns []Conn

	// Engine executes the copies. Required.
	Engine Engine

	// InitThread, when set, runs on the loop's locked OS thread before the loop's first Engine
	// call, at every Start: the library makes the CUDA context current there and pins the thread
	// to the GPU's CPUs. An error makes Start fail.
	InitThread func() error

	// Logger receives the proxy's logs; nil means the library's logger.
	Logger *slog.Logger

	// IdleSpin is how long the loop busy-polls an empty ring before it naps between batches of
	// polls; 0 means DefaultIdleSpin, a negative value never naps (pure spinning, as MSCCL++ does).
	// Triggers that keep flowing never meet a nap; the first trigger after a longer idle period
	// may wait up to about IdleSleep.
	IdleSpin time.Duration

	// IdleSleep is the length of one nap; 0 means DefaultIdleSleep.
	IdleSleep time.Duration
}

// Stats counts what the proxy has done since New.
type Stats struct {
	Tail          uint64 // triggers consumed: the host tail (each slot released once)
	PublishedTail uint64 // the last tail given to Engine.PublishTail
	Executed      uint64 // triggers executed
	Refused       uint64 // triggers refused: unknown connection, out of range, or failed connection
	Skipped       uint64 // valid triggers released without execution because the engine had failed
}

// Proxy serves one trigger ring. Its methods are safe for concurrent use.
type Proxy struct {
	slots      []fifo.Trigger
	slotMask   uint64
	conns      []Conn
	routes     []tableRoute // the distinct routes of conns, which a flush drains (setRoutes)
	engine     Engine
	initThread func() error
	log        *slog.Logger
	idleSpin   time.Duration
	idleSleep  time.Duration

	// Loop state: touched only by the loop goroutine while it runs, and by Start/Stop between
	// runs (the done channel orders the two).
	tail                  uint64
	signals               []uint64 // Flag triggers executed per Conn.SignalID: the last epoch written
	engineFailed          bool
	unknownConnectionSeen bool
	finalDrainErr         error // the drain at the end of the last run

	// Shared with other goroutines.
	stopRequested atomic.Bool
	connFailed    []atomic.Bool
	stats         struct {
		tail, publishedTail, executed, refused, skipped atomic.Uint64
	}

	errMu    sync.Mutex
	err      error   // first engine error
	connErrs []error // why each failed connection was failed

	lifeMu  sync.Mutex // serialises Start and Stop
	running bool
	done    chan struct{} // closed when the loop goroutine exits
}

// New validates cfg and returns a stopped proxy whose tail is 0.
func New(cfg Config) (*Proxy, error) {
	if err := checkRing(cfg.Slots); err != nil {
		return nil, err
	}
	if cfg.Engine == nil {
		return nil, fmt.Errorf("%w: no engine", ErrConfig)
	}
	const maxConns = 1 << fifo.BitsConnID
	if len(cfg.Conns) > maxConns {
		return nil, fmt.Errorf("%w: %d connections, a trigger can name at most %d", ErrConfig, len(cfg.Conns), maxConns)
	}
	for i := range cfg.Conns {
		if err := cfg.Conns[i].check(i); err != nil {
			return nil, err
		}
	}
	p := &Proxy{
		slots:      cfg.Slots,
		slotMask:   uint64(len(cfg.Slots) - 1),
		conns:      append([]Conn(nil), cfg.Conns...),
		engine:     cfg.Engine,
		initThread: cfg.InitThread,
		log:        cfg.Logger,
		idleSpin:   cfg.IdleSpin,
		idleSleep:  cfg.IdleSleep,
		connFailed: make([]atomic.Bool, len(cfg.Conns)),
		signals:    make([]uint64, signalTableSize(0, cfg.Conns)),
		connErrs:   make([]error, len(cfg.Conns)),
	}
	p.setRoutes()
	if p.log == nil {
		p.log = logging.Logger()
	}
	if p.idleSpin == 0 {
		p.idleSpin = DefaultIdleSpin
	}
	if p.idleSleep <= 0 {
		p.idleSleep = DefaultIdleSleep
	}
	if !atomic16Guaranteed {
		p.log.Info("proxy: 16-byte trigger loads are not documented atomic on this CPU; a trigger the GPU stores in two halves could be read torn",
			"goarch", runtime.GOARCH)
	}
	return p, nil
}

// Start launches the loop on its own goroutine, locked to an OS thread, and returns once
// Config.InitThread has succeeded there. Starting a running proxy does nothing. After Stop, Start
// resumes at the tail where the previous run stopped.
func (p *Proxy) Start() error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.running {
		return nil
	}
	p.stopRequested.Store(false)
	p.done = make(chan struct{})
	initErr := make(chan error, 1)
	go p.run(initErr)
	if err := <-initErr; err != nil {
		<-p.done
		return err
	}
	p.running = true
	return nil
}

// Stop asks the loop to stop and waits for it to exit; the loop drains the engine before it
// exits, so no copy it enqueued is in flight afterwards. Triggers still in the ring stay there
// for the next Start. Stopping a stopped proxy does nothing. Stop waits for an Engine call in
// progress, so it is as prompt as Engine.Drain is bounded (see Engine). It returns the error of
// that final drain, if any (also recorded in Err).
func (p *Proxy) Stop() error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if !p.running {
		return nil
	}
	p.stopRequested.Store(true)
	<-p.done
	p.running = false
	return p.finalDrainErr
}

// tableRoute is a route of the connection table and the first connection that carries it.
type tableRoute struct {
	Route
	conn int
}

// setRoutes lists the distinct routes of the table, once per change of the table rather than at
// every flush (the loop does not allocate). The proxy is stopped.
func (p *Proxy) setRoutes() {
	p.routes = p.routes[:0]
	for i := range p.conns {
		r := p.conns[i].Route
		if r != nil && !slices.ContainsFunc(p.routes, func(t tableRoute) bool { return t.Route == r }) {
			p.routes = append(p.routes, tableRoute{r, i})
		}
	}
}

// signalTableSize is the number of signal counters that covers have and every id in conns.
func signalTableSize(have int, conns []Conn) int {
	for _, c := range conns {
		have = max(have, c.SignalID+1)
	}
	return have
}

// AddConns appends connections to the table, after a new connection setup; the proxy must be
// stopped. The new connections' ids follow the existing ones; tail and signal counts carry on.
func (p *Proxy) AddConns(conns ...Conn) error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.running {
		return fmt.Errorf("%w: connections added while the proxy runs", ErrRunning)
	}
	const maxConns = 1 << fifo.BitsConnID
	if n := len(p.conns) + len(conns); n > maxConns {
		return fmt.Errorf("%w: %d connections, a trigger can name at most %d", ErrConfig, n, maxConns)
	}
	for i := range conns {
		if err := conns[i].check(len(p.conns) + i); err != nil {
			return err
		}
	}
	failed := make([]atomic.Bool, len(p.conns)+len(conns))
	for i := range p.connFailed {
		failed[i].Store(p.connFailed[i].Load())
	}
	p.errMu.Lock()
	p.connErrs = append(p.connErrs, make([]error, len(conns))...)
	p.errMu.Unlock()
	p.connFailed = failed
	p.conns = append(p.conns, conns...)
	p.setRoutes()
	if n := signalTableSize(len(p.signals), conns); n > len(p.signals) {
		p.signals = append(p.signals, make([]uint64, n-len(p.signals))...)
	}
	return nil
}

// SetConn replaces connection id of the table, for a connection id whose memory changed (a
// buffer registered in place of another); the proxy must be stopped. A connection failed by a
// refused trigger is healthy again; tail and signal counts carry on.
func (p *Proxy) SetConn(id int, c Conn) error {
	p.lifeMu.Lock()
	defer p.lifeMu.Unlock()
	if p.running {
		return fmt.Errorf("%w: connection %d replaced while the proxy runs", ErrRunning, id)
	}
	if id < 0 || id >= len(p.conns) {
		return fmt.Errorf("%w: connection %d is not in the table of %d", ErrConfig, id, len(p.conns))
	}
	if err := c.check(id); err != nil {
		return err
	}
	p.conns[id] = c
	p.setRoutes()
	p.connFailed[id].Store(false)
	p.errMu.Lock()
	p.connErrs[id] = nil
	p.errMu.Unlock()
	if n := signalTableSize(len(p.signals), []Conn{c}); n > len(p.signals) {
		p.signals = append(p.signals, make([]uint64, n-len(p.signals))...)
	}
	return nil
}

// Err returns the first engine error, or nil. Once it is set the proxy executes no more triggers.
func (p *Proxy) Err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.err
}

// Failed reports whether connection connID has been failed by a refused trigger. It is false for
// ids outside the table.
func (p *Proxy) Failed(connID int) bool {
	return connID >= 0 && connID < len(p.connFailed) && p.connFailed[connID].Load()
}

// ConnErr returns why connection connID was failed, or nil.
func (p *Proxy) ConnErr(connID int) error {
	if connID < 0 || connID >= len(p.connErrs) {
		return nil
	}
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.connErrs[connID]
}

// Stats returns the proxy's counters. Each is read atomically; together they are a recent view,
// not a snapshot. A trigger is counted before its slot is released, so a producer that has seen
// its slot released (flush returned) sees it in Tail and in Executed, Refused or Skipped.
func (p *Proxy) Stats() Stats {
	return Stats{
		Tail:          p.stats.tail.Load(),
		PublishedTail: p.stats.publishedTail.Load(),
		Executed:      p.stats.executed.Load(),
		Refused:       p.stats.refused.Load(),
		Skipped:       p.stats.skipped.Load(),
	}
}
