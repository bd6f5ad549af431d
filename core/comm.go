package core

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// Comm is one rank's communicator: its place in the job and the bootstrap that reaches the other
// ranks. Later layers add connections and the proxy to it. A Comm is safe for use by one goroutine
// at a time; Close releases everything it owns.
type Comm struct {
	bootstrap *bootstrap.TCP
	log       *slog.Logger
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
	c := &Comm{bootstrap: b, log: logging.ForRank(b.Rank())}
	c.log.Info("communicator ready", "nranks", b.Size())
	return c
}

// Rank returns this rank's index in [0, Size()).
func (c *Comm) Rank() int { return c.bootstrap.Rank() }

// Size returns the number of ranks in the job.
func (c *Comm) Size() int { return c.bootstrap.Size() }

// Bootstrap returns the communicator's bootstrap, for out-of-band exchanges between ranks.
func (c *Comm) Bootstrap() *bootstrap.TCP { return c.bootstrap }

// Close releases the communicator. It does not synchronize with other ranks.
func (c *Comm) Close() error {
	if err := c.bootstrap.Close(); err != nil {
		return fmt.Errorf("close communicator of rank %d: %w", c.Rank(), err)
	}
	return nil
}
