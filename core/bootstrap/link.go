package bootstrap

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// An outLink is this rank's connection to one peer, used only for sending. It is dialed by the
// first Send to the peer.
type outLink struct {
	lock chan struct{} // holds one token while a sender owns the link; a channel so waiting can time out
	conn *net.TCPConn  // nil until dialed
	err  error         // set when the link broke; later sends fail with it
}

func newOutLink() *outLink { return &outLink{lock: make(chan struct{}, 1)} }

// send frames data with tag and writes it to peer's link, dialing the link first if needed.
// A message to this rank itself goes straight to the mailbox.
func (b *TCP) send(ctx context.Context, peer, tag int, data []byte) error {
	if peer == b.rank {
		b.box.deliver(peer, tag, append([]byte(nil), data...))
		return nil
	}
	link := b.out[peer]
	select {
	case link.lock <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("tag %d: %w", tag, b.ctxErr(ctx, "waiting for another send to the same peer"))
	}
	defer func() { <-link.lock }()

	if link.err != nil {
		return fmt.Errorf("tag %d: %w", tag, link.err)
	}
	if link.conn == nil {
		c, err := b.dial(ctx, peer)
		if err != nil {
			return fmt.Errorf("tag %d: %w", tag, err)
		}
		link.conn = c
	}

	var hdr [frameHeaderBytes]byte
	encodeFrameHeader(hdr[:], frameHeader{tag: tag, size: len(data)})
	stop := deadlineOnDone(ctx, link.conn.SetWriteDeadline)
	bufs := net.Buffers{hdr[:], data}
	_, err := bufs.WriteTo(link.conn)
	stop()
	if err != nil {
		// Part of the frame may be written: the link cannot be used again.
		if ctx.Err() != nil {
			err = b.ctxErr(ctx, "sending")
		} else if b.closed.Load() {
			err = ErrClosed
		} else {
			err = fmt.Errorf("%w: %v", ErrPeerClosed, err)
		}
		link.err = err
		b.group.drop(link.conn)
		return fmt.Errorf("tag %d: %w", tag, err)
	}
	b.log.Log(ctx, logging.LevelTrace, "bootstrap sent", "peer", peer, "tag", tag, "bytes", len(data))
	return nil
}

// dial connects to peer's listener, sends the handshake and starts a goroutine that notices
// when the peer closes the connection.
func (b *TCP) dial(ctx context.Context, peer int) (*net.TCPConn, error) {
	addr := b.peers[peer]
	if !addr.IsValid() {
		return nil, fmt.Errorf("%w: address of peer %d is not known yet", ErrUnreachable, peer)
	}
	c, err := dialRetry(ctx, addr)
	if err != nil {
		if b.closed.Load() || !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, b.ctxErr(ctx, "dialing "+addr.String())
		}
		return nil, fmt.Errorf("peer %w", err)
	}
	if !b.group.add(c) {
		return nil, ErrClosed
	}
	stop := deadlineOnDone(ctx, c.SetWriteDeadline)
	_, err = c.Write(encodeHandshake(handshake{magic: b.magic, version: protocolVersion, rank: b.rank, nranks: b.nranks}))
	stop()
	if err == nil && !b.group.start(func() { b.watchOutbound(c, peer) }) {
		err = ErrClosed
	}
	if err != nil {
		b.group.drop(c)
		if ctx.Err() != nil {
			return nil, b.ctxErr(ctx, "handshake with "+addr.String())
		}
		return nil, fmt.Errorf("%w: handshake with %s: %v", ErrPeerClosed, addr, err)
	}
	b.log.Info("bootstrap link up", "peer", peer, "to", addr)
	return c, nil
}

// watchOutbound reads c, on which the peer never sends, until it ends: when the peer closes it,
// closing c makes the next send to the peer fail at once instead of writing into the void, and
// the failure is noted for PeerFailed (not in the mailbox: the peer's last messages may still be
// on their way through its own link to this rank).
func (b *TCP) watchOutbound(c *net.TCPConn, peer int) {
	c.SetReadDeadline(time.Time{})
	_, err := io.Copy(io.Discard, c)
	c.Close()
	if err == nil {
		err = errors.New("connection closed")
	}
	b.notePeerFailure(peer, fmt.Errorf("%w: outgoing link: %v", ErrPeerClosed, err))
}

// acceptLoop accepts peers' connections until the listener closes; transient accept errors are
// retried (acceptConns).
func (b *TCP) acceptLoop() {
	acceptConns(b.ln, b.log, &b.acceptErr, func(c *net.TCPConn) bool {
		return b.group.add(c) && b.group.start(func() { b.serveInbound(c) })
	})
}

// serveInbound checks a peer connection's handshake and then delivers its frames to the
// mailbox until it ends. A connection that fails the handshake is logged and closed.
func (b *TCP) serveInbound(c *net.TCPConn) {
	c.SetNoDelay(true)
	peer, err := b.acceptHandshake(c)
	if err != nil {
		if !b.closed.Load() {
			b.log.Warn("bootstrap refused a connection", "remote", c.RemoteAddr().String(), "err", err)
		}
		b.group.drop(c)
		return
	}
	b.log.Info("bootstrap link up", "peer", peer, "from", c.RemoteAddr().String())
	err = b.readFrames(c, peer)
	b.group.drop(c)
	if b.closed.Load() {
		return
	}
	b.log.Info("bootstrap link down", "peer", peer, "err", err)
	b.box.fail(peer, err)
	b.notePeerFailure(peer, err)
}

// acceptHandshake reads and checks c's handshake and claims c as the one incoming link of the
// peer it names. It returns the peer's rank.
func (b *TCP) acceptHandshake(c *net.TCPConn) (int, error) {
	c.SetReadDeadline(time.Now().Add(b.opTimeout()))
	var hb [handshakeBytes]byte
	if _, err := io.ReadFull(c, hb[:]); err != nil {
		return 0, fmt.Errorf("reading handshake: %w", err)
	}
	h, err := decodeHandshake(hb[:])
	switch {
	case err != nil:
		return 0, err
	case h.magic != b.magic || h.version != protocolVersion:
		return 0, fmt.Errorf("%w: magic %#x version %d, want magic %#x version %d", ErrBadMagic, h.magic, h.version, b.magic, protocolVersion)
	case h.nranks != b.nranks:
		return 0, fmt.Errorf("%w: peer says nranks=%d, this rank has %d", ErrNranksMismatch, h.nranks, b.nranks)
	case h.rank < 0 || h.rank >= b.nranks || h.rank == b.rank:
		return 0, fmt.Errorf("%w: peer claims rank %d of %d", ErrRankOutOfRange, h.rank, b.nranks)
	}
	b.inMu.Lock()
	dup := b.inbound[h.rank]
	b.inbound[h.rank] = true
	b.inMu.Unlock()
	if dup {
		return 0, fmt.Errorf("%w: a second connection claims rank %d", ErrDuplicateRank, h.rank)
	}
	c.SetReadDeadline(time.Time{})
	return h.rank, nil
}

// readFrames delivers c's frames to the mailbox until c ends, and returns why it ended:
// ErrPeerClosed for a close between frames or a failed connection, ErrMessageSize for a frame
// cut short or above the size limit.
func (b *TCP) readFrames(c *net.TCPConn, peer int) error {
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		var hb [frameHeaderBytes]byte
		n, err := io.ReadFull(r, hb[:])
		switch {
		case err == io.EOF:
			return fmt.Errorf("%w: connection closed", ErrPeerClosed)
		case err == io.ErrUnexpectedEOF:
			return fmt.Errorf("%w: connection closed %d bytes into a frame header", ErrMessageSize, n)
		case err != nil:
			return fmt.Errorf("%w: %v", ErrPeerClosed, err)
		}
		h, err := decodeFrameHeader(hb[:])
		if err != nil {
			return err
		}
		if pending, ok := b.box.admits(peer, int64(h.size), b.maxPending); !ok {
			return fmt.Errorf("%w: rank %d sent a frame of %d bytes with tag %d while %d bytes it sent before were not received (MSCCLPP_BOOTSTRAP_MAX_PENDING=%d)",
				ErrPendingLimit, peer, h.size, h.tag, pending, b.maxPending)
		}
		payload := make([]byte, h.size)
		if n, err := io.ReadFull(r, payload); err != nil {
			return fmt.Errorf("%w: frame with tag %d announced %d bytes, got %d: %v", ErrMessageSize, h.tag, h.size, n, err)
		}
		b.log.Log(context.Background(), logging.LevelTrace, "bootstrap received", "peer", peer, "tag", h.tag, "bytes", h.size)
		b.box.deliver(peer, h.tag, payload)
	}
}
