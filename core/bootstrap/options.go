package bootstrap

import (
	"log/slog"
	"time"

	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// Options tune a root or a rank. Zero values mean: Timeout from config.BootstrapTimeout.Get()
// (MSCCLPP_BOOTSTRAP_TIMEOUT, or mscclppSetBootstrapConnTimeout's value), Interface from
// config.SocketIfname.Get() (MSCCLPP_SOCKET_IFNAME), Logger logging.ForRank(rank) for a rank and
// logging.Logger() for a root.
type Options struct {
	// Timeout bounds every operation of a rank (the earlier of it and the context's deadline)
	// and, for a root, the time from NewRoot until all ranks must have joined. When it is zero,
	// a rank reads config.BootstrapTimeout at the start of each operation, so that a new value
	// set while the rank exists (mscclppSetBootstrapConnTimeout) bounds its later operations.
	Timeout time.Duration
	// Interface names the network interface whose address is listened on and advertised.
	Interface string
	// Key, for JoinAddr, is the job's secret, mixed into its magic; empty: MSCCLPP_BOOTSTRAP_KEY.
	Key string
	// Logger receives the package's log records.
	Logger *slog.Logger
}

// rankOptions returns o with its zero fields filled in for a rank, but for Timeout: a rank reads
// the configuration's at each operation (TCP.opTimeout).
func (o Options) rankOptions(rank int) Options {
	if o.Timeout < 0 {
		o.Timeout = 0
	}
	if o.Logger == nil {
		o.Logger = logging.ForRank(rank)
	}
	return o
}

// rootOptions returns o with its zero fields filled in for a root.
func (o Options) rootOptions() Options {
	if o.Timeout <= 0 {
		o.Timeout = config.BootstrapTimeout.Get()
	}
	if o.Logger == nil {
		o.Logger = logging.Logger()
	}
	return o
}
