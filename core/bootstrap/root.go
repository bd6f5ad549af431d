package bootstrap

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// maxRanks bounds nranks, so that a hello cannot make the root track an absurd job.
const maxRanks = 1 << 20

// replyWriteTimeout bounds each reply the root writes. Replies are a few bytes and fit in the
// socket buffer, so the limit only matters for a peer that stopped reading.
const replyWriteTimeout = time.Second

// A Root accepts the ranks of one job and introduces them to each other: it collects one hello
// per rank, checks that they agree, sends each rank the listening address of its ring successor
// and stops. Its deadline is Options.Timeout counted from NewRoot.
type Root struct {
	id       UniqueID
	magic    uint64
	addr     netip.AddrPort
	ln       *net.TCPListener
	log      *slog.Logger
	timeout  time.Duration
	deadline time.Time

	group     connGroup     // the hello connections, the accept loop and the hello readers
	stop      chan struct{} // closed by Close
	done      chan struct{} // closed when serve returns
	err       error         // serve's result; written before done is closed
	closeOnce sync.Once
	acceptErr acceptFailure // the last accept error, named when ranks never joined
}

// NewRoot starts a root listening on an ephemeral port of the chosen interface's address (see
// Options) and serving in its own goroutine. The root picks a random magic for the job.
func NewRoot(opts Options) (*Root, error) {
	opts = opts.rootOptions()
	ip, err := chooseIP(opts.Interface, netip.Addr{})
	if err != nil {
		return nil, &errs.OpError{Op: "bootstrap root", Rank: errs.NoRank, Peer: errs.NoRank, Err: err}
	}
	var m [8]byte
	if _, err := rand.Read(m[:]); err != nil {
		return nil, &errs.OpError{Op: "bootstrap root", Rank: errs.NoRank, Peer: errs.NoRank,
			Err: fmt.Errorf("%w: random magic: %v", errs.ErrSystem, err)}
	}
	return startRoot(netip.AddrPortFrom(ip, 0), binary.LittleEndian.Uint64(m[:]), opts)
}

// startRoot starts a root listening on addr with the given magic. opts must have its defaults.
func startRoot(addr netip.AddrPort, magic uint64, opts Options) (*Root, error) {
	ln, bound, err := listenTCP(addr)
	if err != nil {
		return nil, &errs.OpError{Op: "bootstrap root", Rank: errs.NoRank, Peer: errs.NoRank, Err: err}
	}
	r := &Root{
		id:       encodeUniqueID(bound, magic),
		magic:    magic,
		addr:     bound,
		ln:       ln,
		log:      opts.Logger.With("root", bound.String()),
		timeout:  opts.Timeout,
		deadline: time.Now().Add(opts.Timeout),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	r.log.Info("bootstrap root listening", "timeout", opts.Timeout)
	go r.serve()
	return r, nil
}

// ID returns the unique id that ranks pass to Join.
func (r *Root) ID() UniqueID { return r.id }

// Wait blocks until the root has served all ranks (nil), failed or timed out (the error, which
// the joined ranks received too), or was closed (ErrClosed).
func (r *Root) Wait() error {
	<-r.done
	return r.err
}

// Close stops the root, telling the ranks that joined so far that it aborted, and waits for its
// goroutines to end. It is idempotent and returns nil.
func (r *Root) Close() error {
	r.closeOnce.Do(func() {
		close(r.stop)
		<-r.done
		r.group.wait()
	})
	return nil
}

// arrival is a connection whose hello carried the job's magic and version.
type arrival struct {
	conn  *net.TCPConn
	hello hello
}

func (r *Root) serve() {
	hellos := make(chan arrival)
	defer func() {
		r.ln.Close()
		r.group.close()
		close(r.done)
	}()
	r.group.start(func() { r.acceptLoop(hellos) })

	timer := time.NewTimer(time.Until(r.deadline))
	defer timer.Stop()

	joined := make(map[int]arrival)
	nranks, nranksFrom := 0, 0 // the job's size and the rank whose hello set it
	for nranks == 0 || len(joined) < nranks {
		select {
		case a := <-hellos:
			h := a.hello
			var code errorCode
			var detail string
			switch {
			case h.nranks < 1 || h.nranks > maxRanks || h.rank >= h.nranks || nranks != 0 && h.rank >= nranks:
				// No rank of this job: it costs only its own connection (a stranger that knows the
				// magic, or a misconfigured process), never the job.
				r.refuse(a, codeRankOutOfRange, fmt.Sprintf("a client at %s claims rank %d of %d", a.conn.RemoteAddr(), h.rank, h.nranks))
				continue
			case nranks != 0 && h.nranks != nranks:
				code, detail = codeNranksMismatch, fmt.Sprintf("rank %d says nranks=%d but rank %d says nranks=%d", h.rank, h.nranks, nranksFrom, nranks)
			default:
				if prev, dup := joined[h.rank]; dup {
					code, detail = codeDuplicateRank, fmt.Sprintf("rank %d claimed by both %s and %s", h.rank, prev.hello.addr, h.addr)
				}
			}
			if code != 0 {
				r.err = r.abort(joined, &a, code, detail)
				return
			}
			if nranks == 0 {
				nranks, nranksFrom = h.nranks, h.rank
			}
			joined[h.rank] = a
			r.log.Info("bootstrap rank joined", "peer", h.rank, "nranks", nranks, "addr", h.addr, "joined", len(joined))
		case <-timer.C:
			detail := "no rank joined"
			if nranks != 0 {
				detail = fmt.Sprintf("ranks %s of %d never joined", missingRanks(joined, nranks), nranks)
			}
			detail += " within " + r.timeout.String()
			if err := r.acceptErr.get(); err != nil {
				detail += " (the root could not accept every connection: " + err.Error() + ")"
			}
			r.err = r.abort(joined, nil, codeTimeout, detail)
			return
		case <-r.stop:
			r.abort(joined, nil, codeAborted, "root closed before all ranks joined")
			r.err = &errs.OpError{Op: "bootstrap root " + r.addr.String(), Rank: errs.NoRank, Peer: errs.NoRank, Err: ErrClosed}
			return
		}
	}

	var failed []string
	for rank := 0; rank < nranks; rank++ {
		succ := joined[(rank+1)%nranks].hello.addr
		var b [addrBytes]byte
		encodeAddr(b[:], succ)
		if err := writeReply(joined[rank].conn, encodeReply(replyOK, 0, b[:])); err != nil {
			r.log.Warn("bootstrap root could not reply", "peer", rank, "err", err)
			failed = append(failed, strconv.Itoa(rank))
		}
	}
	if len(failed) > 0 {
		r.err = &errs.OpError{Op: "bootstrap root " + r.addr.String(), Rank: errs.NoRank, Peer: errs.NoRank,
			Err: fmt.Errorf("%w: could not send ranks %s their successor", ErrPeerClosed, strings.Join(failed, ","))}
		return
	}
	r.log.Info("bootstrap root served all ranks", "nranks", nranks)
}

// refuse answers one connection whose hello names no rank of the job with an error reply, logs
// it at WARN with the client's address and closes it; the job goes on.
func (r *Root) refuse(a arrival, code errorCode, detail string) {
	r.log.Warn("bootstrap root refused a connection", "remote", a.conn.RemoteAddr().String(), "reason", detail)
	if err := writeReply(a.conn, encodeReply(replyError, code, []byte(detail))); err != nil {
		r.log.Debug("bootstrap root could not answer a refused connection", "err", err)
	}
	r.group.drop(a.conn)
}

// abort tells every joined rank, and extra if not nil, that the job failed with code, and
// returns the root's own error for it.
func (r *Root) abort(joined map[int]arrival, extra *arrival, code errorCode, detail string) error {
	err := &errs.OpError{Op: "bootstrap root " + r.addr.String(), Rank: errs.NoRank, Peer: errs.NoRank,
		Err: fmt.Errorf("%w: %s", errorForCode(code), detail)}
	r.log.Warn("bootstrap root aborting the job", "err", err)
	msg := encodeReply(replyError, code, []byte(detail))
	tell := func(a arrival) {
		if werr := writeReply(a.conn, msg); werr != nil {
			r.log.Warn("bootstrap root could not report the error", "peer", a.hello.rank, "err", werr)
		}
	}
	for _, a := range joined {
		tell(a)
	}
	if extra != nil {
		tell(*extra)
	}
	return err
}

func writeReply(c *net.TCPConn, msg []byte) error {
	c.SetWriteDeadline(time.Now().Add(replyWriteTimeout))
	_, err := c.Write(msg)
	return err
}

// acceptLoop accepts connections until the listener closes and reads each one's hello in its own
// goroutine; transient accept errors are retried (acceptConns).
func (r *Root) acceptLoop(hellos chan<- arrival) {
	acceptConns(r.ln, r.log, &r.acceptErr, func(c *net.TCPConn) bool {
		return r.group.add(c) && r.group.start(func() { r.readHello(c, hellos) })
	})
}

// readHello reads c's hello and hands c to serve if it carries the job's magic and version;
// otherwise it logs a warning and closes c.
func (r *Root) readHello(c *net.TCPConn, hellos chan<- arrival) {
	c.SetNoDelay(true)
	c.SetReadDeadline(r.deadline)
	var b [helloBytes]byte
	h, err := func() (hello, error) {
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return hello{}, fmt.Errorf("reading hello: %w", err)
		}
		h, err := decodeHello(b[:])
		if err != nil {
			return hello{}, err
		}
		if h.magic != r.magic || h.version != protocolVersion {
			return hello{}, fmt.Errorf("%w: magic %#x version %d, want magic %#x version %d",
				ErrBadMagic, h.magic, h.version, r.magic, protocolVersion)
		}
		return h, nil
	}()
	if err != nil {
		select {
		case <-r.done: // serve closed c: nothing to report
		default:
			r.log.Warn("bootstrap root refused a connection", "remote", c.RemoteAddr().String(), "err", err)
		}
		r.group.drop(c)
		return
	}
	c.SetReadDeadline(time.Time{})
	select {
	case hellos <- arrival{conn: c, hello: h}:
	case <-r.done:
	}
}

// missingRanks formats the ranks in [0, nranks) that are not in joined as ranges, e.g. "2-5,7".
func missingRanks(joined map[int]arrival, nranks int) string {
	var b strings.Builder
	for lo := 0; lo < nranks; lo++ {
		if _, ok := joined[lo]; ok {
			continue
		}
		hi := lo
		for hi+1 < nranks {
			if _, ok := joined[hi+1]; ok {
				break
			}
			hi++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(lo))
		if hi > lo {
			b.WriteString("-" + strconv.Itoa(hi))
		}
		lo = hi
	}
	return b.String()
}
