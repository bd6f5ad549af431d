package legacy

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/core/proxy"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// MaxConnections is the most connections one rank may declare: a trigger carries the
// connection's index in BitsConnID bits.
const MaxConnections = 1 << fifo.BitsConnID

// Errors of connection setup, each in one of the classes of package errs.
var (
	// ErrNoCounterpart: a connection has no matching connection on the peer.
	ErrNoCounterpart = errs.New(errs.ErrRemote, "connection has no counterpart on the peer")
	// ErrNotSetUp: connections were queried or the proxy launched before mscclppConnectionSetup
	// set up every declared connection.
	ErrNotSetUp = errs.New(errs.ErrInvalidUsage, "connections not set up")
)

// connection is one mscclppConnect call and, once set up, what it became.
type connection struct {
	remoteRank int
	tag        int
	localBuf   cuda.DevicePtr
	size       uint64

	transport core.Transport // P2P or IB
	device    string         // IB: the NIC mscclppConnect named, empty for the provider's choice

	// Filled by ConnectionSetup.
	setUp      bool
	route      proxy.Route           // IB: carries the proxy's puts and signals over libfabric
	localReg   core.RegisteredMemory // IB: localBuf registered for the network, the puts' source
	remoteBuf  cuda.DevicePtr        // the peer's buffer, mapped here
	remoteSize uint64
	localSig   cuda.DevicePtr // this end's SignalEpochID
	remoteSig  cuda.DevicePtr // the peer's SignalEpochID, mapped here
	waitEpoch  cuda.DevicePtr // this end's wait counter
}

type connKey struct{ remoteRank, tag int }

// Connect declares a connection to remoteRank with the given tag over localBuf (size bytes of
// device memory). It records intent only; ConnectionSetup makes it real. Rank i's (j, tag)
// connection pairs with rank j's (i, tag).
//
// device names the NIC of an IB connection (mscclppConnect's ibDev); other transports ignore it.
func (c *Comm) Connect(remoteRank, tag int, localBuf cuda.DevicePtr, size uint64, transport core.Transport, device string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return err
	}
	switch {
	case remoteRank == c.Rank():
		return fmt.Errorf("connect: remote rank %d is this rank: %w", remoteRank, errs.ErrInvalidArgument)
	case remoteRank < 0 || remoteRank >= c.Size():
		return fmt.Errorf("connect: remote rank %d is out of range [0, %d): %w", remoteRank, c.Size(), errs.ErrInvalidArgument)
	case localBuf == 0:
		return fmt.Errorf("connect to rank %d tag %d: buffer is NULL: %w", remoteRank, tag, errs.ErrInvalidArgument)
	case size == 0:
		return fmt.Errorf("connect to rank %d tag %d: buffer size is 0: %w", remoteRank, tag, errs.ErrInvalidArgument)
	case tag < 0 || tag > math.MaxInt32:
		return fmt.Errorf("connect to rank %d: tag %d is outside [0, %d]: %w", remoteRank, tag, math.MaxInt32, errs.ErrInvalidArgument)
	}
	switch transport {
	case core.TransportP2P:
	case core.TransportIB:
		if err := checkIBDevice(remoteRank, tag, device); err != nil {
			return err
		}
	case core.TransportSHM:
		return fmt.Errorf("connect to rank %d tag %d over SHM: the shared-memory transport is not implemented in the legacy API: %w",
			remoteRank, tag, core.ErrTransportUnavailable)
	default:
		return fmt.Errorf("connect to rank %d tag %d: unknown transport %d: %w", remoteRank, tag, int(transport), errs.ErrInvalidArgument)
	}
	key := connKey{remoteRank, tag}
	if _, dup := c.connIndex[key]; dup {
		return fmt.Errorf("connect: a connection to rank %d with tag %d already exists: %w", remoteRank, tag, errs.ErrInvalidUsage)
	}
	if len(c.conns) >= MaxConnections {
		return fmt.Errorf("connect to rank %d tag %d: more than %d connections on one rank: %w",
			remoteRank, tag, MaxConnections, errs.ErrInvalidUsage)
	}
	if c.proxyRunning() {
		return fmt.Errorf("connect to rank %d tag %d: the proxy is running; stop it first: %w", remoteRank, tag, errs.ErrInvalidUsage)
	}
	c.connIndex[key] = len(c.conns)
	c.conns = append(c.conns, &connection{remoteRank: remoteRank, tag: tag, localBuf: localBuf, size: size,
		transport: transport, device: device})
	return nil
}

// pendingConnections counts the connections declared since the last setup.
func (c *Comm) pendingConnections() int {
	n := 0
	for _, conn := range c.conns {
		if !conn.setUp {
			n++
		}
	}
	return n
}

// requireSetUp refuses queries while some declared connection is not set up.
func (c *Comm) requireSetUp(op string) error {
	if n := c.pendingConnections(); n > 0 {
		return fmt.Errorf("%s: %d connection(s) declared since the last mscclppConnectionSetup: %w", op, n, ErrNotSetUp)
	}
	return nil
}

// DevConns returns the device connections, one per Connect call, in call order.
func (c *Comm) DevConns() ([]DevConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return nil, err
	}
	if err := c.requireSetUp("get device connections"); err != nil {
		return nil, err
	}
	out := make([]DevConn, len(c.conns))
	for i := range c.conns {
		out[i] = c.devConn(i)
	}
	return out, nil
}

// DevConnIndex returns the position of the (remoteRank, tag) connection in DevConns.
func (c *Comm) DevConnIndex(remoteRank, tag int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.usable(); err != nil {
		return 0, err
	}
	if err := c.requireSetUp("get device connection"); err != nil {
		return 0, err
	}
	i, ok := c.connIndex[connKey{remoteRank, tag}]
	if !ok {
		return 0, fmt.Errorf("no connection to rank %d with tag %d: %w", remoteRank, tag, errs.ErrInvalidArgument)
	}
	return i, nil
}

// devConn builds the device view of connection i. c.mu is held and the connection is set up.
func (c *Comm) devConn(i int) DevConn {
	conn := c.conns[i]
	return DevConn{
		BaseConn: BaseConn{
			RemoteRank:          int32(conn.remoteRank),
			Tag:                 int32(conn.tag),
			LocalBuff:           uintptr(conn.localBuf),
			LocalSignalEpochID:  uintptr(conn.localSig),
			RemoteSignalEpochID: uintptr(conn.remoteSig),
			WaitEpochID:         uintptr(conn.waitEpoch),
			RemoteBuff:          uintptr(conn.remoteBuf),
		},
		Fifo: fifo.ConcurrentFifo{
			TriggerFifo:     uintptr(c.gpu.fifo.Ring()),
			TriggerFifoTail: uintptr(c.gpu.fifo.TailReplica()),
			TriggerFifoHead: uintptr(c.gpu.fifo.Head()),
			ConnID:          int32(i),
		},
	}
}

// checkIBDevice checks the NIC an IB connection names. mscclppTransportIB means libfabric's
// verbs provider on device, unless MSCCLPP_NET_PROVIDER names another provider, which then
// decides (and device is not checked). A device verbs does not offer is refused, naming the ones
// it does.
func checkIBDevice(remoteRank, tag int, device string) error {
	if config.NetProvider.Get() != "" || device == "" {
		return nil
	}
	what := fmt.Sprintf("connect to rank %d tag %d over IB", remoteRank, tag)
	domains, err := fabric.Domains("verbs")
	if err != nil {
		return fmt.Errorf("%s: no RDMA device was found (MSCCLPP_NET_PROVIDER picks another libfabric provider, e.g. tcp): %w: %w",
			what, core.ErrTransportUnavailable, err)
	}
	if !slices.Contains(domains, device) {
		offered := "none"
		if len(domains) > 0 {
			offered = strings.Join(domains, ", ")
		}
		return fmt.Errorf("%s: no RDMA device was found named %q (libfabric's verbs provider offers: %s; MSCCLPP_NET_PROVIDER picks another provider): %w",
			what, device, offered, core.ErrTransportUnavailable)
	}
	return nil
}
