package core

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// ErrPeerFailed: the peer failed its side of a Communicator exchange and said why.
var ErrPeerFailed = errs.New(errs.ErrRemote, "peer failed its side of the exchange")

// Communicator sets up connections, semaphores and memory between the ranks of a bootstrap, on
// top of a Context: each method makes a local object, sends it to the peer rank, receives the
// peer's and combines them, in a goroutine of its own, and returns a Future of the result.
//
// Setting up a channel between ranks a and b takes, on both ranks:
//
//  1. Connect(cfg, peer, tag): endpoints are exchanged; Get gives the connection.
//  2. BuildSemaphore(conn, peer, tag): semaphore stubs are exchanged; Get gives the semaphore.
//  3. SendMemory(mem, peer, tag) on one rank and RecvMemory(peer, tag) on the other, for each
//     memory a channel writes to or reads from.
//
// Calls are matched across the two ranks by (kind of call, peer, tag), and calls with the same
// kind, peer and tag are matched in the order they were made: the n-th Connect(.., b, t) on rank
// a pairs with the n-th Connect(.., a, t) on rank b, and the n-th SendMemory(.., b, t) on a with
// the n-th RecvMemory(a, t) on b. Each call both sends and receives (SendMemory only sends and
// RecvMemory only receives), even when its local part fails, so that one failed pair does not
// shift the pairs after it; the peer of a failed call gets ErrPeerFailed with the reason.
//
// Messages travel on bootstrap tags from 1<<30 + 1<<29 up (above the legacy Comm's), one range of
// MaxUserTag tags per kind; user tags must lie in [0, MaxUserTag). The Communicator does not own the bootstrap or the context: close them
// after the last Get.
type Communicator struct {
	b   *bootstrap.TCP
	ctx *Context

	mu        sync.Mutex
	turns     map[turnKey]chan struct{} // the latest call per key; closed when it is done exchanging
	turnDone  *sync.Cond                // on mu: broadcast when a call is done exchanging
	peerHosts map[int]uint64            // the host of each rank an endpoint came from (Connect)
}

// msgKind is what a Communicator message carries.
type msgKind int

const (
	kindEndpoint msgKind = iota
	kindStub
	kindMemory
	numKinds
)

func (k msgKind) String() string {
	switch k {
	case kindEndpoint:
		return "endpoint"
	case kindStub:
		return "semaphore stub"
	case kindMemory:
		return "memory"
	default:
		return fmt.Sprintf("msgKind(%d)", int(k))
	}
}

// The library's bootstrap tags start at ReservedTagBase; a program's own exchanges on a bootstrap
// the library also uses stay below it. The legacy communicator's connection setups and buffer
// registrations count up from LegacySetupTagBase and LegacyRegisterTagBase, one tag per call;
// the Communicator's kind k with user tag t travels on communicatorTagBase + k<<userTagBits + t.
const (
	ReservedTagBase       = 1 << 30
	LegacySetupTagBase    = ReservedTagBase
	LegacyRegisterTagBase = ReservedTagBase + 1<<28
	communicatorTagBase   = ReservedTagBase + 1<<29
	// CollectivesTagBase starts the tags of package collectives' exchanges across hosts, past
	// the Communicator's (whose kinds use [communicatorTagBase, +numKinds<<userTagBits)).
	CollectivesTagBase = ReservedTagBase + 1<<29 + 1<<28
	userTagBits        = 24
	// MaxUserTag is one more than the largest tag Communicator methods accept.
	MaxUserTag = 1 << userTagBits
)

// communicatorTag maps a message kind and a user tag to the bootstrap tag it travels on.
func communicatorTag(kind msgKind, tag int) (int, error) {
	if kind < 0 || kind >= numKinds {
		return 0, fmt.Errorf("message kind %d: %w", int(kind), errs.ErrInternal)
	}
	if tag < 0 || tag >= MaxUserTag {
		return 0, fmt.Errorf("tag %d is outside [0, %d): %w", tag, MaxUserTag, errs.ErrInvalidArgument)
	}
	return communicatorTagBase + int(kind)<<userTagBits + tag, nil
}

// turnKey orders the calls that must pair in order with the peer's. Sends and receives of memory
// are separate keys: one rank's SendMemory pairs with the other's RecvMemory.
type turnKey struct {
	kind msgKind
	recv bool // RecvMemory (for kindMemory)
	peer int
	tag  int
}

// NewCommunicator returns a communicator over b, building its objects in ctx.
func NewCommunicator(b *bootstrap.TCP, ctx *Context) *Communicator {
	c := &Communicator{b: b, ctx: ctx, turns: map[turnKey]chan struct{}{}}
	c.turnDone = sync.NewCond(&c.mu)
	return c
}

// Bootstrap returns the communicator's bootstrap.
func (c *Communicator) Bootstrap() *bootstrap.TCP { return c.b }

// Context returns the communicator's context.
func (c *Communicator) Context() *Context { return c.ctx }

// Connect creates an endpoint for cfg, exchanges it with remoteRank's (which may be this rank)
// and connects the two. It pairs with remoteRank's Connect to this rank with the same tag. When
// both sides ask for CUDA IPC (TransportP2P) and are on different hosts (MSCCLPP_HOSTID), they
// connect over the network (TransportIB) instead, so that a program written for one host runs
// across hosts unchanged; later SendMemory calls to that rank then send CUDA IPC memory
// registered again for the network.
func (c *Communicator) Connect(cfg EndpointConfig, remoteRank, tag int) Future[*Connection] {
	return start(c, turnKey{kind: kindEndpoint, peer: remoteRank, tag: tag}, func(x *exchange) (*Connection, error) {
		defer x.finish()
		local, remote, err := c.swapEndpoints(x, cfg)
		if err != nil {
			return nil, err
		}
		if acrossHosts(local, remote) {
			// Both sides asked for CUDA IPC and see each other on another host: both take the
			// network instead, with a second exchange of the same turn.
			logging.Logger().Info("connect: the peer is on another host: CUDA IPC replaced by the network (IB)", "peer", x.key.peer,
				"tag", x.key.tag, "device", cfg.Device.String())
			cfg.Transport = TransportIB
			if local, remote, err = c.swapEndpoints(x, cfg); err != nil {
				return nil, err
			}
		}
		c.mu.Lock()
		if c.peerHosts == nil {
			c.peerHosts = map[int]uint64{}
		}
		c.peerHosts[x.key.peer] = remote.origin.host
		c.mu.Unlock()
		conn, err := c.ctx.Connect(local, remote)
		return conn, x.fail(err)
	})
}

// forPeer returns mem as remoteRank can use it: memory of this process registered for CUDA IPC,
// sent to a rank that Connect found on another host, is registered again for the network (its
// GPU memory then goes staged through host buffers); anything else is mem itself. It waits for
// the Connects with the rank in flight; with none ever made, the memory goes as it is.
func (c *Communicator) forPeer(mem RegisteredMemory, remoteRank int) (RegisteredMemory, error) {
	if mem.transport != TransportP2P || !mem.origin.sameProcess(thisProcess()) {
		return mem, nil
	}
	if host, known := c.peerHost(remoteRank); !known || host == mem.origin.host {
		return mem, nil
	}
	return c.ctx.RegisterMemory(mem.addr, mem.size, TransportIB)
}

// swapEndpoints creates this side's endpoint of cfg, sends it to the peer and returns it with
// the peer's, keeping the exchange's turn (the caller finishes it).
func (c *Communicator) swapEndpoints(x *exchange, cfg EndpointConfig) (local, remote Endpoint, err error) {
	local, err = c.ctx.CreateEndpoint(cfg)
	var msg []byte
	if err == nil {
		msg, err = local.MarshalBinary()
	}
	theirs, err := x.swapKeep(msg, err)
	if err != nil {
		return Endpoint{}, Endpoint{}, err
	}
	if remote, err = UnmarshalEndpoint(theirs); err != nil {
		return Endpoint{}, Endpoint{}, x.fail(err)
	}
	return local, remote, nil
}

// acrossHosts reports whether local and remote both ask for CUDA IPC but are on different hosts,
// which both sides of a connection decide alike.
func acrossHosts(local, remote Endpoint) bool {
	return local.config.Transport == TransportP2P && remote.config.Transport == TransportP2P &&
		!remote.origin.sameHost(local.origin)
}

// BuildSemaphore makes a semaphore stub on conn, exchanges it with remoteRank's, and builds this
// side's semaphore. It pairs with remoteRank's BuildSemaphore to this rank with the same tag, on
// the other end of conn.
func (c *Communicator) BuildSemaphore(conn *Connection, remoteRank, tag int) Future[*Semaphore] {
	return start(c, turnKey{kind: kindStub, peer: remoteRank, tag: tag}, func(x *exchange) (*Semaphore, error) {
		var msg []byte
		stub, err := NewSemaphoreStub(conn)
		if err == nil {
			msg, err = stub.MarshalBinary()
		}
		theirs, err := x.swap(msg, err)
		if err != nil {
			return nil, err
		}
		remote, err := UnmarshalSemaphoreStub(c.ctx, theirs)
		if err != nil {
			return nil, x.fail(err)
		}
		sema, err := NewSemaphore(stub, remote)
		return sema, x.fail(err)
	})
}

// SendMemory sends mem to remoteRank, whose RecvMemory from this rank with the same tag gets it
// (registered again for the network first when it is CUDA IPC memory and Connect found the rank
// on another host: so SendMemory of CUDA IPC memory waits for the Connects with that rank in
// flight, and a program must not make the peer's Connect wait for this memory).
func (c *Communicator) SendMemory(mem RegisteredMemory, remoteRank, tag int) Future[struct{}] {
	return start(c, turnKey{kind: kindMemory, peer: remoteRank, tag: tag}, func(x *exchange) (struct{}, error) {
		mem, err := c.forPeer(mem, remoteRank)
		var msg []byte
		if err == nil {
			msg, err = mem.MarshalBinary()
		}
		return struct{}{}, x.send(msg, err)
	})
}

// RecvMemory receives the memory remoteRank's SendMemory to this rank with the same tag sends,
// and makes it usable here (see UnmarshalRegisteredMemory).
func (c *Communicator) RecvMemory(remoteRank, tag int) Future[RegisteredMemory] {
	return start(c, turnKey{kind: kindMemory, recv: true, peer: remoteRank, tag: tag}, func(x *exchange) (RegisteredMemory, error) {
		theirs, err := x.recv()
		if err != nil {
			return RegisteredMemory{}, err
		}
		m, err := UnmarshalRegisteredMemory(c.ctx, theirs)
		return m, x.fail(err)
	})
}

// start checks the call's peer and tag, takes the call's turn among calls with the same key and
// runs op in a goroutine once the previous call with that key is done exchanging.
func start[T any](c *Communicator, key turnKey, op func(x *exchange) (T, error)) Future[T] {
	x := &exchange{c: c, key: key}
	tag, err := communicatorTag(key.kind, key.tag)
	if err == nil && (key.peer < 0 || key.peer >= c.b.Size()) {
		err = fmt.Errorf("rank %d is outside [0, %d): %w", key.peer, c.b.Size(), errs.ErrInvalidArgument)
	}
	if err != nil {
		return failedFuture[T](x.fail(err))
	}
	x.tag = tag
	prev, done := c.takeTurn(key)
	x.done = done
	return goFuture(func() (T, error) {
		defer x.finish()
		if prev != nil {
			<-prev
		}
		return op(x)
	})
}

// takeTurn queues a call with key behind the previous one: it returns the channel closed when
// the previous call is done exchanging (nil if none) and the function that says so of this call.
func (c *Communicator) takeTurn(key turnKey) (prev <-chan struct{}, done func()) {
	mine := make(chan struct{})
	c.mu.Lock()
	defer c.mu.Unlock()
	prev = c.turns[key] // nil if none
	c.turns[key] = mine
	return prev, func() {
		close(mine)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.turns[key] == mine {
			delete(c.turns, key)
		}
		c.turnDone.Broadcast()
	}
}

// peerHost returns the host of remoteRank as a Connect with it found, waiting for the Connects
// with it in flight (a program may start SendMemory right after Connect, before either is done);
// known is false when no Connect with the rank has told it.
func (c *Communicator) peerHost(remoteRank int) (host uint64, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if host, known = c.peerHosts[remoteRank]; known || !c.connecting(remoteRank) {
			return host, known
		}
		c.turnDone.Wait()
	}
}

// connecting reports whether a Connect with remoteRank is in flight. c.mu is held.
func (c *Communicator) connecting(remoteRank int) bool {
	for key := range c.turns {
		if key.kind == kindEndpoint && key.peer == remoteRank {
			return true
		}
	}
	return false
}

// exchange is one call's traffic with its peer.
type exchange struct {
	c        *Communicator
	key      turnKey
	tag      int // the bootstrap tag
	done     func()
	doneOnce sync.Once
}

// finish releases the call's turn; it may be called more than once.
func (x *exchange) finish() {
	if x.done != nil {
		x.doneOnce.Do(x.done)
	}
}

// fail wraps err, if any, with the call, its peer and tag.
func (x *exchange) fail(err error) error {
	if err == nil {
		return nil
	}
	return &errs.OpError{Op: fmt.Sprintf("communicator %v exchange (tag %d)", x.key.kind, x.key.tag), Rank: x.c.b.Rank(), Peer: x.key.peer, Err: err}
}

// send sends msg, or the reason localErr why there is none, to the peer. It returns localErr
// or the send's error.
func (x *exchange) send(msg []byte, localErr error) error {
	err := x.c.b.Send(context.Background(), x.key.peer, x.tag, encodeEnvelope(msg, localErr))
	defer x.finish()
	if localErr != nil {
		return x.fail(localErr)
	}
	return x.fail(err)
}

// recv receives the peer's message; a failure the peer reported is an ErrPeerFailed error.
func (x *exchange) recv() ([]byte, error) {
	defer x.finish()
	return x.recvKeep()
}

// recvKeep is recv without finishing the exchange's turn, for an exchange of more than one round.
func (x *exchange) recvKeep() ([]byte, error) {
	b, err := x.c.b.Recv(context.Background(), x.key.peer, x.tag)
	if err != nil {
		return nil, x.fail(err)
	}
	msg, err := decodeEnvelope(b)
	return msg, x.fail(err)
}

// swap sends msg (or localErr) and receives the peer's. It receives even when this side failed,
// so that the next call with the same key pairs with the peer's next call.
func (x *exchange) swap(msg []byte, localErr error) ([]byte, error) {
	defer x.finish()
	return x.swapKeep(msg, localErr)
}

// swapKeep is swap without finishing the exchange's turn, for an exchange of more than one round.
func (x *exchange) swapKeep(msg []byte, localErr error) ([]byte, error) {
	if err := x.c.b.Send(context.Background(), x.key.peer, x.tag, encodeEnvelope(msg, localErr)); err != nil {
		return nil, x.fail(errors.Join(localErr, err))
	}
	theirs, err := x.recvKeep()
	if localErr != nil {
		return nil, x.fail(localErr)
	}
	return theirs, err
}

// A Communicator message is an envelope: a status byte, then the payload (envelopeOK) or the
// sender's error message (envelopeFailed), at most maxFailureBytes of it.
const (
	envelopeOK      = 1
	envelopeFailed  = 2
	maxFailureBytes = 1024
)

func encodeEnvelope(msg []byte, err error) []byte {
	if err != nil {
		s := err.Error()
		if len(s) > maxFailureBytes {
			s = s[:maxFailureBytes]
		}
		return append([]byte{envelopeFailed}, s...)
	}
	return append([]byte{envelopeOK}, msg...)
}

func decodeEnvelope(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("empty message: %w", errs.ErrRemote)
	}
	switch b[0] {
	case envelopeOK:
		return b[1:], nil
	case envelopeFailed:
		return nil, fmt.Errorf("%w: %s", ErrPeerFailed, b[1:])
	default:
		return nil, fmt.Errorf("message with status %d: %w", b[0], errs.ErrRemote)
	}
}
