package legacy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/fifo"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// ErrCommClosed: the communicator was closed.
var ErrCommClosed = errs.New(errs.ErrInvalidUsage, "communicator is closed")

// Comm is one rank's legacy communicator: its place in the job, the bootstrap that reaches the
// other ranks, its connections, and (from the first ConnectionSetup on) its GPU state. Its
// methods are safe for concurrent use; Close releases everything it owns.
type Comm struct {
	bootstrap *bootstrap.TCP
	log       *slog.Logger

	mu            sync.Mutex
	closed        bool
	conns         []*connection   // one per Connect call, in call order; index = connId
	connIndex     map[connKey]int // (remoteRank, tag) -> index in conns
	setups        int             // ConnectionSetup calls that completed, for message tags
	registrations int             // RegisterBuffer calls that completed, for message tags
	gpu           *gpuState       // nil until the first ConnectionSetup
	failure       error           // the first proxy (CUDA) error; the communicator is unusable after it
}

// gpuState is what a communicator holds on its GPU: the context that registers its buffers and
// counters and maps its peers' (core's one registry), the GPU's primary context for the driver
// calls of this package, and the proxy FIFO.
type gpuState struct {
	device cuda.Device
	pctx   cuda.Context
	ctx    *core.Context
	fifo   *core.ProxyFifo // MSCCLPP_PROXY_FIFO_SIZE triggers and the proxy serving them

	// IB connections: this rank's libfabric endpoint (made with the first one) and the core
	// connection to each peer, which the rank's IB connections with that peer share.
	ib      core.Endpoint
	ibConns map[int]*core.Connection
	// netSources: the allocations registered for the network as sources of registered buffer
	// writes, by base address.
	netSources map[cuda.DevicePtr]core.RegisteredMemory
}

// InitRank joins a job of nranks ranks whose root listens at addr ("ip:port", "if:ip:port" or
// "[ipv6]:port"); rank 0 runs the root there. It blocks until every rank has joined or the
// bootstrap timeout passes.
func InitRank(ctx context.Context, nranks int, addr string, rank int) (*Comm, error) {
	b, err := bootstrap.JoinAddr(ctx, addr, rank, nranks, bootstrap.Options{})
	if err != nil {
		return nil, fmt.Errorf("init rank %d of %d at %q: %w", rank, nranks, addr, err)
	}
	return newComm(b), nil
}

// InitRankFromID joins the job whose root produced id (see bootstrap.NewRoot). It blocks until
// every rank has joined or the bootstrap timeout passes.
func InitRankFromID(ctx context.Context, nranks int, id bootstrap.UniqueID, rank int) (*Comm, error) {
	b, err := bootstrap.Join(ctx, id, rank, nranks, bootstrap.Options{})
	if err != nil {
		return nil, fmt.Errorf("init rank %d of %d from unique id: %w", rank, nranks, err)
	}
	return newComm(b), nil
}

func newComm(b *bootstrap.TCP) *Comm {
	c := &Comm{bootstrap: b, log: logging.ForRank(b.Rank()), connIndex: map[connKey]int{}}
	c.log.Info("communicator ready", "nranks", b.Size())
	return c
}

// Rank returns this rank's index in [0, Size()).
func (c *Comm) Rank() int { return c.bootstrap.Rank() }

// Size returns the number of ranks in the job.
func (c *Comm) Size() int { return c.bootstrap.Size() }

// Bootstrap returns the communicator's bootstrap, for out-of-band exchanges between ranks. Tags
// from core.ReservedTagBase up are the library's.
func (c *Comm) Bootstrap() *bootstrap.TCP { return c.bootstrap }

// usable refuses calls on a closed or failed communicator. c.mu is held.
func (c *Comm) usable() error {
	if c.closed {
		return ErrCommClosed
	}
	c.collectProxyFailure()
	if c.failure != nil {
		return fmt.Errorf("communicator of rank %d failed earlier: %w", c.Rank(), c.failure)
	}
	return nil
}

// Err returns the error that made the communicator unusable (a CUDA error in its proxy), if any.
func (c *Comm) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.collectProxyFailure()
	return c.failure
}

// Close stops the proxy and releases the connections, the GPU memory and the bootstrap. It does
// not synchronize with other ranks; peers must have finished using this rank's memory.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrCommClosed
	}
	c.closed = true
	var errList []error
	if err := c.stopProxy(); err != nil {
		errList = append(errList, err)
	}
	if c.gpu != nil {
		if err := c.gpu.close(); err != nil {
			errList = append(errList, err)
		}
		c.gpu = nil
	}
	if err := c.bootstrap.Close(); err != nil {
		errList = append(errList, err)
	}
	if err := errors.Join(errList...); err != nil {
		return fmt.Errorf("close communicator of rank %d: %w", c.Rank(), err)
	}
	return nil
}

// Logger returns the communicator's logger, whose lines carry its rank.
func (c *Comm) Logger() *slog.Logger { return c.log }

// newGPUState retains dev's primary context and creates the registry context and the proxy FIFO.
func newGPUState(dev cuda.Device, log *slog.Logger) (g *gpuState, err error) {
	g = &gpuState{device: dev, ctx: core.NewContext()}
	if g.pctx, err = dev.RetainPrimaryContext(); err != nil {
		return nil, errors.Join(fmt.Errorf("GPU %d: %w", dev, err), g.ctx.Close())
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, g.close())
		}
	}()
	if g.fifo, err = core.NewProxyFifo(dev, fifo.FifoSize, log); err != nil {
		return g, err
	}
	return g, nil
}

// close stops and frees the FIFO, closes the context (which unmaps the peers' memory and frees
// the counters) and releases the primary context.
func (g *gpuState) close() error {
	var errList []error
	if g.fifo != nil {
		errList = append(errList, g.fifo.Close())
	}
	errList = append(errList, g.ctx.Close(), g.pctx.Release())
	g.fifo = nil
	if err := errors.Join(errList...); err != nil {
		return fmt.Errorf("release GPU %d resources: %w", g.device, err)
	}
	return nil
}
