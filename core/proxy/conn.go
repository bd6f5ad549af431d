package proxy

import "fmt"

// MaxSignalID bounds Conn.SignalID (the proxy keeps one counter per id).
const MaxSignalID = 1<<16 - 1

// Conn is one entry of the proxy's connection table; a trigger's connId is its index. Addresses
// are device addresses (or host memory mapped into the device) as the Engine understands them.
type Conn struct {
	LocalBuf   uint64 // start of this rank's registered buffer: the source of puts
	LocalSize  uint64 // its size in bytes
	RemoteBuf  uint64 // start of the peer's registered buffer mapped here: the destination of puts
	RemoteSize uint64 // its size in bytes

	// RemoteSignal is the address of remoteSignalEpochId->proxy, the peer's counter that its wait()
	// polls. The n-th Flag trigger of the connection stores n there, after its data: every
	// signal() bumps this end's localSignalEpochId->device once and pushes one Flag, so n is the
	// epoch that Flag announces. (Copying the device counter itself, as the original design did,
	// is racy: when the copy executes late, the counter may already count a later signal whose
	// data has not landed, and the peer's wait() would return too early.)
	RemoteSignal uint64

	// SignalID names the signal count this connection's Flags advance. Connections that share a
	// semaphore (port channels built on one semaphore) share its id and so its count; the legacy
	// path gives each connection its own id. It must be in [0, MaxSignalID].
	SignalID int

	Peer int // remote rank, for logs and errors
	Tag  int // the connection's tag, for logs and errors

	// Route, when set, carries the connection's puts and signals in place of the Engine: the
	// peer's memory is not mapped here, so LocalBuf, RemoteBuf and RemoteSignal are unused and may
	// be 0 (LocalSize and RemoteSize still bound the puts). A pointer: flushes drain each route once.
	Route Route
}

// String names the connection in logs and errors.
func (c *Conn) String() string { return fmt.Sprintf("peer %d tag %d", c.Peer, c.Tag) }

// check validates one table entry, at index id.
func (c *Conn) check(id int) error {
	if c.Route != nil {
		if c.SignalID < 0 || c.SignalID > MaxSignalID {
			return fmt.Errorf("%w: connection %d (%s): signal id %d outside [0, %d]", ErrConfig, id, c, c.SignalID, MaxSignalID)
		}
		return nil // the route reaches both buffers; nothing here is an address
	}
	if err := checkRegion("local buffer", c.LocalBuf, c.LocalSize); err != nil {
		return fmt.Errorf("%w: connection %d (%s): %w", ErrConfig, id, c, err)
	}
	if err := checkRegion("remote buffer", c.RemoteBuf, c.RemoteSize); err != nil {
		return fmt.Errorf("%w: connection %d (%s): %w", ErrConfig, id, c, err)
	}
	if c.SignalID < 0 || c.SignalID > MaxSignalID {
		return fmt.Errorf("%w: connection %d (%s): signal id %d outside [0, %d]", ErrConfig, id, c, c.SignalID, MaxSignalID)
	}
	if c.RemoteSignal == 0 {
		return fmt.Errorf("%w: connection %d (%s): the remote signal address is 0", ErrConfig, id, c)
	}
	return nil
}

// checkRegion refuses a region that wraps around the address space or has a size but no address.
func checkRegion(what string, base, size uint64) error {
	if size != 0 && base == 0 {
		return fmt.Errorf("%s has %d bytes at address 0", what, size)
	}
	if !fits(base, size, ^uint64(0)) {
		return fmt.Errorf("%s [%#x, +%#x) wraps around the address space", what, base, size)
	}
	return nil
}

// fits reports whether the range [offset, offset+size) lies within [0, limit), computed without
// overflowing uint64: offset+size itself may not be representable.
func fits(offset, size, limit uint64) bool {
	return size <= limit && offset <= limit-size
}
