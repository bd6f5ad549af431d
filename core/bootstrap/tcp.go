package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// Reserved tags. User tags are >= 0, so the package's own messages never match a user Recv.
const (
	tagAddrs     = -1 // the address table exchanged during Join
	tagAllGather = -2
	tagBarrier   = -3
)

// TCP is one rank's bootstrap: it knows every rank's listening address and exchanges tagged
// messages with them over TCP. Send, Recv and RecvInto may be called from several goroutines
// (concurrent Sends to one peer each write their message whole). The collective calls,
// AllGather and Barrier, must not overlap on one TCP: one made while another is in progress
// fails at once with ErrCollectiveInProgress (an errs.ErrInvalidUsage), since overlapping calls
// cannot be matched across ranks.
type TCP struct {
	rank, nranks int
	magic        uint64
	timeout      time.Duration // Options.Timeout; zero: the configuration's, read by each operation
	log          *slog.Logger
	ln           *net.TCPListener
	acceptErr    acceptFailure    // the last error accepting a peer's connection
	addr         netip.AddrPort   // this rank's listening address
	peers        []netip.AddrPort // every rank's listening address, filled in by Join
	out          []*outLink       // outgoing link to each peer, dialed on first Send
	box          *mailbox         // messages received from the incoming links
	maxPending   int64            // the most bytes held from one peer and not yet received

	inMu    sync.Mutex
	inbound map[int]bool // peers whose incoming link was accepted

	collMu sync.Mutex
	collOp string // the collective call in progress ("all-gather", "barrier"), or ""

	group     connGroup          // every connection, and the goroutines serving them
	life      context.Context    // canceled by Close; every operation's context ends with it
	cancel    context.CancelFunc // cancels life
	closed    atomic.Bool
	closeOnce sync.Once
	root      *Root // the root rank 0 runs for JoinAddr, until Join is done with it

	peerFailOnce sync.Once
	peerFailed   chan struct{} // closed at the first failure of a peer's link (PeerFailed)
	peerErr      error         // that failure; written before peerFailed is closed

	goneMu sync.Mutex
	gone   map[int]error // each peer's first link failure (PeerGone)
}

// Join joins the job whose root id names as rank of nranks, and returns once every rank's
// address is known. Rank and nranks are checked before any network traffic. The whole of Join
// is bounded by the earlier of ctx's deadline and now + Options.Timeout.
func Join(ctx context.Context, id UniqueID, rank, nranks int, opts Options) (*TCP, error) {
	if err := checkRank(rank, nranks); err != nil {
		return nil, &errs.OpError{Op: "bootstrap join", Rank: rank, Peer: errs.NoRank, Err: err}
	}
	root, magic, err := decodeUniqueID(id)
	if err != nil {
		return nil, &errs.OpError{Op: "bootstrap join", Rank: rank, Peer: errs.NoRank, Err: err}
	}
	return join(ctx, root, magic, "", false, rank, nranks, opts)
}

// JoinAddr joins the job whose root listens on addr (see ParseAddr for its forms) as rank of
// nranks. Rank 0 starts the root on addr and joins it too; the other ranks dial it. An
// interface named in addr is where this rank listens and advertises its address; it wins over
// Options.Interface and MSCCLPP_SOCKET_IFNAME. Since the ranks share nothing but the address,
// the job's magic is derived from it: it is the 64-bit FNV-1a hash of "mscclpp-bootstrap:"
// followed by the canonical "ip:port" (the interface name is not part of it), and by the job's
// key (Options.Key, else MSCCLPP_BOOTSTRAP_KEY) when it has one: without a key, any process that
// can reach the address can join or talk to the ranks. Deadlines are as
// for Join, and rank 0's root gives up slightly before rank 0 does.
func JoinAddr(ctx context.Context, addr string, rank, nranks int, opts Options) (*TCP, error) {
	if err := checkRank(rank, nranks); err != nil {
		return nil, &errs.OpError{Op: "bootstrap join", Rank: rank, Peer: errs.NoRank, Err: err}
	}
	root, ifname, err := parseAddr(addr)
	if err != nil {
		return nil, &errs.OpError{Op: "bootstrap join", Rank: rank, Peer: errs.NoRank, Err: err}
	}
	key := opts.Key
	if key == "" {
		key = config.BootstrapKey.Get()
	}
	return join(ctx, root, magicForAddr(root, key), ifname, rank == 0, rank, nranks, opts)
}

func checkRank(rank, nranks int) error {
	if nranks < 1 || nranks > maxRanks {
		return fmt.Errorf("%w: nranks is %d, want 1 to %d", errBadNranks, nranks, maxRanks)
	}
	if rank < 0 || rank >= nranks {
		return fmt.Errorf("%w: rank %d of %d", ErrRankOutOfRange, rank, nranks)
	}
	return nil
}

func join(ctx context.Context, rootAddr netip.AddrPort, magic uint64, ifname string, runRoot bool, rank, nranks int, opts Options) (*TCP, error) {
	opts = opts.rankOptions(rank)
	if ifname == "" {
		ifname = opts.Interface
	}
	fail := func(err error) (*TCP, error) {
		return nil, &errs.OpError{Op: "bootstrap join", Rank: rank, Peer: errs.NoRank, Err: err}
	}
	ip, err := chooseIP(ifname, rootAddr.Addr())
	if err != nil {
		return fail(err)
	}
	ln, addr, err := listenTCP(netip.AddrPortFrom(ip, 0))
	if err != nil {
		return fail(err)
	}
	b := &TCP{
		rank:       rank,
		nranks:     nranks,
		magic:      magic,
		timeout:    opts.Timeout,
		log:        opts.Logger,
		ln:         ln,
		addr:       addr,
		peers:      make([]netip.AddrPort, nranks),
		out:        make([]*outLink, nranks),
		box:        newMailbox(),
		maxPending: config.BootstrapMaxPending.Get(),

		peerFailed: make(chan struct{}),
		gone:       make(map[int]error),
		inbound:    make(map[int]bool),
	}
	for i := range b.out {
		b.out[i] = newOutLink()
	}
	b.life, b.cancel = context.WithCancel(context.Background())
	b.group.start(b.acceptLoop)

	ctx, cancel := b.opContext(ctx)
	defer cancel()
	if err := b.join(ctx, rootAddr, runRoot, opts); err != nil {
		b.Close()
		return fail(err)
	}
	b.log.Info("bootstrap joined", "nranks", nranks, "addr", addr, "root", rootAddr)
	return b, nil
}

// join introduces b to the root, then gathers every rank's address from the other ranks.
func (b *TCP) join(ctx context.Context, rootAddr netip.AddrPort, runRoot bool, opts Options) error {
	if runRoot {
		// The root gives up a little before this rank does, so that this rank too learns from
		// the root which ranks never joined.
		dl, _ := ctx.Deadline()
		left := time.Until(dl)
		left -= min(left/10, time.Second)
		if left <= 0 {
			return b.ctxErr(ctx, "starting the root")
		}
		root, err := startRoot(rootAddr, b.magic, Options{Timeout: left, Logger: opts.Logger})
		if err != nil {
			return err
		}
		b.root = root
	}
	succ, err := b.hello(ctx, rootAddr)
	if b.root != nil {
		// Let the root finish replying to the other ranks before stopping it.
		if err == nil {
			b.root.Wait()
		}
		b.root.Close()
		b.root = nil
	}
	if err != nil {
		return err
	}
	b.peers[b.rank] = b.addr
	b.peers[(b.rank+1)%b.nranks] = succ
	if b.nranks == 1 {
		return nil
	}

	table := make([]byte, b.nranks*addrBytes)
	encodeAddr(table[b.rank*addrBytes:], b.addr)
	if err := b.allGather(ctx, table, addrBytes, tagAddrs); err != nil {
		return fmt.Errorf("exchanging addresses: %w", err)
	}
	for r := range b.peers {
		a, err := decodeAddr(table[r*addrBytes : (r+1)*addrBytes])
		if err != nil {
			return fmt.Errorf("address of rank %d: %w", r, err)
		}
		if b.peers[r].IsValid() && b.peers[r] != a {
			return fmt.Errorf("%w: rank %d's address is %s, but the ring says %s", errCorrupt, r, b.peers[r], a)
		}
		b.peers[r] = a
	}
	return nil
}

// hello dials the root, sends this rank's hello and returns the successor's address the root replies with.
func (b *TCP) hello(ctx context.Context, rootAddr netip.AddrPort) (netip.AddrPort, error) {
	c, err := dialRetry(ctx, rootAddr)
	if err != nil {
		if b.closed.Load() || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return netip.AddrPort{}, b.ctxErr(ctx, "dialing root "+rootAddr.String())
		}
		return netip.AddrPort{}, fmt.Errorf("root %w", err)
	}
	if !b.group.add(c) {
		return netip.AddrPort{}, ErrClosed
	}
	defer b.group.drop(c)
	stop := deadlineOnDone(ctx, c.SetDeadline)
	defer stop()

	ioErr := func(err error) error {
		if ctx.Err() != nil {
			return b.ctxErr(ctx, fmt.Sprintf("no reply from root %s (are all ranks started?)", rootAddr))
		}
		if b.closed.Load() {
			return ErrClosed
		}
		return fmt.Errorf("%w: root %s: %v", ErrPeerClosed, rootAddr, err)
	}
	msg := encodeHello(hello{magic: b.magic, version: protocolVersion, rank: b.rank, nranks: b.nranks, addr: b.addr})
	if _, err := c.Write(msg); err != nil {
		return netip.AddrPort{}, ioErr(err)
	}
	var hb [replyHeaderBytes]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return netip.AddrPort{}, ioErr(err)
	}
	h, err := decodeReplyHeader(hb[:])
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("root %s: %w", rootAddr, err)
	}
	payload := make([]byte, h.size)
	if _, err := io.ReadFull(c, payload); err != nil {
		return netip.AddrPort{}, ioErr(err)
	}
	if h.kind == replyError {
		return netip.AddrPort{}, fmt.Errorf("%w: %s (reported by root %s)", errorForCode(h.code), payload, rootAddr)
	}
	succ, err := decodeAddr(payload)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("root %s: successor: %w", rootAddr, err)
	}
	return succ, nil
}

// deadlineOnDone applies ctx's deadline with set (a conn's SetDeadline or SetWriteDeadline),
// and moves the deadline to the past when ctx is done so that blocked I/O returns. The returned
// stop undoes the latter; once it returns, the deadline is no longer touched.
func deadlineOnDone(ctx context.Context, set func(time.Time) error) (stop func()) {
	if dl, ok := ctx.Deadline(); ok {
		set(dl)
	}
	fired := make(chan struct{})
	stopFunc := context.AfterFunc(ctx, func() {
		set(time.Unix(1, 0))
		close(fired)
	})
	return func() {
		if !stopFunc() {
			<-fired
		}
	}
}

// opTimeout returns how long an operation starting now may take: Options.Timeout if the caller
// set one, else config.BootstrapTimeout as it is now (MSCCLPP_BOOTSTRAP_TIMEOUT, or the value
// of a later mscclppSetBootstrapConnTimeout).
func (b *TCP) opTimeout() time.Duration {
	if b.timeout > 0 {
		return b.timeout
	}
	return config.BootstrapTimeout.Get()
}

// opContext returns the context of one operation: it ends at the earlier of parent's deadline
// and now + opTimeout, or when b is closed.
func (b *TCP) opContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, b.opTimeout())
	stop := context.AfterFunc(b.life, cancel)
	return ctx, func() {
		stop()
		cancel()
	}
}

// ctxErr explains why ctx ended: b was closed (ErrClosed), the deadline passed while doing what
// (ErrTimeout), or the caller canceled (ErrCanceled).
func (b *TCP) ctxErr(ctx context.Context, what string) error {
	switch {
	case b.closed.Load():
		return ErrClosed
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		if err := b.acceptErr.get(); err != nil { // a peer's connection may be among those refused
			return fmt.Errorf("%w: %s (this rank could not accept every connection: %v)", ErrTimeout, what, err)
		}
		return fmt.Errorf("%w: %s", ErrTimeout, what)
	default:
		return fmt.Errorf("%w: %s: %w", ErrCanceled, what, ctx.Err())
	}
}

// Rank returns this rank.
func (b *TCP) Rank() int { return b.rank }

// Size returns the number of ranks in the job.
func (b *TCP) Size() int { return b.nranks }

func (b *TCP) opError(op string, peer int, err error) error {
	return &errs.OpError{Op: "bootstrap " + op, Rank: b.rank, Peer: peer, Err: err}
}

func (b *TCP) checkPeer(peer, tag int) error {
	if peer < 0 || peer >= b.nranks {
		return fmt.Errorf("%w: peer %d of %d", ErrRankOutOfRange, peer, b.nranks)
	}
	if tag < 0 {
		return fmt.Errorf("%w: tag %d", errBadTag, tag)
	}
	return nil
}

// Send sends data, at most MaxMessageBytes, to peer with tag. It returns once data is handed to
// the network, so the caller may reuse data; it does not wait for peer to receive it.
func (b *TCP) Send(ctx context.Context, peer, tag int, data []byte) error {
	if b.closed.Load() {
		return b.opError("send", peer, ErrClosed)
	}
	if err := b.checkPeer(peer, tag); err != nil {
		return b.opError("send", peer, err)
	}
	if len(data) > maxFrameBytes {
		return b.opError("send", peer, fmt.Errorf("%w: message of %d bytes exceeds the %d-byte limit", errBadSize, len(data), maxFrameBytes))
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	if err := b.send(ctx, peer, tag, data); err != nil {
		return b.opError("send", peer, err)
	}
	return nil
}

// Recv returns the oldest message peer sent with tag, waiting for one if needed. Messages are
// matched by (peer, tag) whatever order they arrive in.
func (b *TCP) Recv(ctx context.Context, peer, tag int) ([]byte, error) {
	if b.closed.Load() {
		return nil, b.opError("recv", peer, ErrClosed)
	}
	if err := b.checkPeer(peer, tag); err != nil {
		return nil, b.opError("recv", peer, err)
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	msg, err := b.recv(ctx, peer, tag)
	if err != nil {
		return nil, b.opError("recv", peer, err)
	}
	return msg, nil
}

// RecvInto is Recv into buf. The message must be exactly len(buf) bytes long; otherwise it is
// consumed and dropped and RecvInto returns ErrMessageSize. A buf longer than MaxMessageBytes,
// which no message can fill, is refused at once.
func (b *TCP) RecvInto(ctx context.Context, peer, tag int, buf []byte) error {
	if b.closed.Load() {
		return b.opError("recv", peer, ErrClosed)
	}
	if err := b.checkPeer(peer, tag); err != nil {
		return b.opError("recv", peer, err)
	}
	if len(buf) > maxFrameBytes {
		return b.opError("recv", peer, fmt.Errorf("%w: message of %d bytes exceeds the %d-byte limit", errBadSize, len(buf), maxFrameBytes))
	}
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	if err := b.recvInto(ctx, peer, tag, buf); err != nil {
		return b.opError("recv", peer, err)
	}
	return nil
}

func (b *TCP) recv(ctx context.Context, peer, tag int) ([]byte, error) {
	msg, err := b.box.take(ctx, peer, tag)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = b.ctxErr(ctx, "no message arrived")
		}
		return nil, fmt.Errorf("tag %d: %w", tag, err)
	}
	return msg, nil
}

func (b *TCP) recvInto(ctx context.Context, peer, tag int, buf []byte) error {
	msg, err := b.recv(ctx, peer, tag)
	if err != nil {
		return err
	}
	if len(msg) != len(buf) {
		return fmt.Errorf("tag %d: %w: got %d bytes, want %d", tag, ErrMessageSize, len(msg), len(buf))
	}
	copy(buf, msg)
	return nil
}

// PeerFailed returns a channel that is closed when a link with a peer ends while this bootstrap
// is open: the peer's process died, or it closed its bootstrap. Links are made on first use, so
// only peers that have exchanged a message with this rank are watched. PeerErr says which.
func (b *TCP) PeerFailed() <-chan struct{} { return b.peerFailed }

// PeerErr returns the first failure of a peer's link (an *errs.OpError naming the peer, wrapping
// ErrPeerClosed or the read error), or nil while PeerFailed is open.
func (b *TCP) PeerErr() error {
	select {
	case <-b.peerFailed:
		return b.peerErr
	default:
		return nil
	}
}

// PeerGone returns the failure of the link with peer (an *errs.OpError naming it, as PeerErr's),
// or nil while the link is up or was never made. Unlike PeerFailed, it tells about one peer: a
// rank still waiting for some peers need not give up because another one, already done with
// it, closed its bootstrap first.
func (b *TCP) PeerGone(peer int) error {
	b.goneMu.Lock()
	defer b.goneMu.Unlock()
	return b.gone[peer]
}

// notePeerFailure records a failure of a peer's link (the first per peer, and the first of all
// for PeerFailed), unless this bootstrap is closing.
func (b *TCP) notePeerFailure(peer int, err error) {
	if b.closed.Load() {
		return
	}
	opErr := &errs.OpError{Op: "bootstrap link", Rank: b.rank, Peer: peer, Err: err}
	b.goneMu.Lock()
	if b.gone[peer] == nil {
		b.gone[peer] = opErr
	}
	b.goneMu.Unlock()
	b.peerFailOnce.Do(func() {
		b.peerErr = opErr
		close(b.peerFailed)
	})
}

// Close closes the listener and every connection, makes blocked and later operations return
// ErrClosed and waits for the package's goroutines to end. It is idempotent and returns nil.
func (b *TCP) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		b.cancel()
		b.ln.Close()
		b.group.close()
		b.box.close()
		if b.root != nil {
			b.root.Close()
		}
		b.group.wait()
		b.log.Info("bootstrap closed")
	})
	return nil
}
