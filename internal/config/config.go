package config

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// lookupEnv reads one environment variable; ReadEnvironmentWith replaces it.
var lookupEnv = os.LookupEnv

// ReadEnvironmentWith makes every Var read the environment through lookup from now on (a Var
// already read keeps its value). The C library passes a getenv of the C environment: Go keeps its
// own copy of the environment, taken when the library was loaded, which does not see a setenv
// that the program made afterwards (as programs do before creating a communicator). Call it
// before any Var is read, from an init function.
func ReadEnvironmentWith(lookup func(name string) (string, bool)) { lookupEnv = lookup }

// Var is one tunable: an environment variable with a default and a parser.
type Var[T any] struct {
	Name    string // environment variable, e.g. "MSCCLPP_BOOTSTRAP_TIMEOUT"
	Default T
	Doc     string // one line for docs/CONFIG.md
	Secret  bool   // its value is never logged
	parse   func(string) (T, error)

	once       sync.Once
	val        T
	overridden bool        // the environment set a valid value
	announced  atomic.Bool // the override was logged

	// override, when set, wins over the environment (for example mscclppSetBootstrapConnTimeout).
	override atomic.Pointer[T]
}

// Get returns the override if one was set, else the environment's value, else the default.
// An environment value that is malformed or outside the variable's bounds falls back to the
// default with a WARN log naming the variable, through the logger SetLogger set.
func (v *Var[T]) Get() T {
	if o := v.override.Load(); o != nil {
		return *o
	}
	var raw string
	var parseErr error
	v.once.Do(func() {
		v.val = v.Default
		var ok bool
		raw, ok = lookupEnv(v.Name)
		if !ok || raw == "" {
			return
		}
		parsed, err := v.parse(raw)
		if err != nil {
			parseErr = err
			return
		}
		v.val, v.overridden = parsed, true
	})
	// Log outside once.Do: the log handler itself reads MSCCLPP_DEBUG through a Var, and logging
	// from inside the Once would re-enter it.
	if parseErr != nil {
		logger().Warn("environment variable out of range or malformed, using the default",
			"var", v.Name, "value", raw, "default", v.Default, "err", parseErr)
	} else if v.overridden && v.announced.CompareAndSwap(false, true) {
		var shown any = v.val
		if v.Secret {
			shown = "(set; not shown)"
		}
		logger().Info("environment override", "var", v.Name, "value", shown)
	}
	return v.val
}

// loggerFunc returns the logger the variables report through; SetLogger sets it.
var loggerFunc atomic.Pointer[func() *slog.Logger]

// SetLogger makes the variables report malformed values and overrides through f's logger (the
// library's: package logging sets it, so that config need not import it). Until then they go to
// slog.Default(), which the library never changes.
func SetLogger(f func() *slog.Logger) { loggerFunc.Store(&f) }

func logger() *slog.Logger {
	if f := loggerFunc.Load(); f != nil {
		return (*f)()
	}
	return slog.Default()
}

// Set overrides the environment and default for the rest of the process.
func (v *Var[T]) Set(x T) { v.override.Store(&x) }

// Reset drops an override set by Set and forgets the cached environment value (tests use it).
func (v *Var[T]) Reset() {
	v.override.Store(nil)
	v.once = sync.Once{}
	v.overridden = false
	v.announced.Store(false)
}

// Describe returns "NAME (default D): doc", the line docs/CONFIG.md carries for it.
func (v *Var[T]) Describe() string {
	return fmt.Sprintf("%s (default %v): %s", v.Name, v.Default, v.Doc)
}

// Bounds of the numeric variables, stated in their Doc lines and in docs/CONFIG.md. A value
// outside them is refused like a malformed one: WARN, and the default.
const (
	// MaxTimeout bounds the timeouts (and mscclppSetBootstrapConnTimeout): no bootstrap step or
	// network write should wait longer than a day, and the bound keeps seconds far from
	// overflowing time.Duration (292 years), which would make a huge value negative or small.
	MaxTimeout = 24 * time.Hour
	// maxCollSpins bounds MSCCLPP_COLL_MAX_SPINS: 2^40 polls, about a thousand times the
	// default's minutes; -1 waits for ever.
	maxCollSpins = 1 << 40
	// maxCollBlocks bounds MSCCLPP_COLL_MAX_BLOCKS: a call launches at most 128 blocks anyway,
	// and the bound keeps the value far within the 32 bits the ranks exchange it in.
	maxCollBlocks = 1024
	// maxProxyTrace bounds MSCCLPP_PROXY_TRACE: a million flushes is more than any diagnosis reads.
	maxProxyTrace = 1_000_000
	// MSCCLPP_BOOTSTRAP_MAX_PENDING: from 64 MiB (a 1 GiB message, the frame limit, then needs
	// a larger value) to 1 TiB.
	minPendingBytes = 64 << 20
	maxPendingBytes = 1 << 40
)

// parseSeconds returns a parser of a whole number of seconds from 1 to max.
func parseSeconds(max time.Duration) func(string) (time.Duration, error) {
	maxSeconds := int64(max / time.Second)
	return func(s string) (time.Duration, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, err
		}
		if n <= 0 || n > maxSeconds {
			return 0, fmt.Errorf("want a number of seconds from 1 to %d, got %d", maxSeconds, n)
		}
		return time.Duration(n) * time.Second, nil
	}
}

func parseString(s string) (string, error) { return strings.TrimSpace(s), nil }

// parseInt returns a parser of decimal integers that accepts those ok accepts; want says which
// those are, for the error.
func parseInt(want string, ok func(int64) bool) func(string) (int64, error) {
	return func(s string) (int64, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return 0, err
		}
		if !ok(n) {
			return 0, fmt.Errorf("want %s, got %d", want, n)
		}
		return n, nil
	}
}

var (
	// parseSpins accepts 1 to maxCollSpins polls, or -1 for no bound.
	parseSpins = parseInt(fmt.Sprintf("1 to %d polls, or -1 for no bound", maxCollSpins),
		func(n int64) bool { return n >= 1 && n <= maxCollSpins || n == -1 })
	// parseBlocks accepts 0 (no limit) or a grid of 2 to maxCollBlocks blocks.
	parseBlocks = parseInt(fmt.Sprintf("0 (no limit) or 2 to %d", maxCollBlocks),
		func(n int64) bool { return n == 0 || n >= 2 && n <= maxCollBlocks })
	// parseFlushes accepts 0 to maxProxyTrace flushes.
	parseFlushes = parseInt(fmt.Sprintf("0 to %d", maxProxyTrace), func(n int64) bool { return n >= 0 && n <= maxProxyTrace })
	// parsePending accepts minPendingBytes to maxPendingBytes.
	parsePending = parseInt(fmt.Sprintf("%d to %d bytes", minPendingBytes, maxPendingBytes),
		func(n int64) bool { return n >= minPendingBytes && n <= maxPendingBytes })
)

// parseChoice accepts one of choices, in any case.
func parseChoice(choices ...string) func(string) (string, error) {
	return func(s string) (string, error) {
		s = strings.ToLower(strings.TrimSpace(s))
		for _, c := range choices {
			if s == c {
				return s, nil
			}
		}
		return "", fmt.Errorf("want one of %s", strings.Join(choices, ", "))
	}
}

// Level names accepted by MSCCLPP_DEBUG, from quietest to loudest.
const (
	LevelWarn  = "WARN"
	LevelInfo  = "INFO"
	LevelTrace = "TRACE"
)

func parseLevel(s string) (string, error) {
	switch u := strings.ToUpper(strings.TrimSpace(s)); u {
	case LevelWarn, LevelInfo, LevelTrace:
		return u, nil
	case "VERSION", "ERROR":
		// NCCL-style values users may carry over; treat as the quietest level.
		return LevelWarn, nil
	default:
		return "", fmt.Errorf("want WARN, INFO or TRACE")
	}
}

// The library's tunables. Every MSCCLPP_* variable read anywhere is declared here.
var (
	Debug = &Var[string]{
		Name: "MSCCLPP_DEBUG", Default: LevelWarn, parse: parseLevel,
		Doc: "log level: WARN, INFO or TRACE",
	}
	BootstrapTimeout = &Var[time.Duration]{
		Name: "MSCCLPP_BOOTSTRAP_TIMEOUT", Default: 30 * time.Second, parse: parseSeconds(MaxTimeout),
		Doc: "seconds a bootstrap step (join, send, receive, all-gather, barrier) may take before it fails, 1 to 86400 (a day: no step should wait longer, and larger values would overflow); mscclppSetBootstrapConnTimeout overrides it",
	}
	NCCLLibrary = &Var[string]{
		Name: "MSCCLPP_NCCL_LIBRARY", Default: "libnccl.so.2", parse: parseString,
		Doc: "the NCCL library cmd/mscclpp-bench dlopens for its side-by-side figures: a file name searched the usual way, or a path",
	}
	SocketIfname = &Var[string]{
		Name: "MSCCLPP_SOCKET_IFNAME", Default: "", parse: parseString,
		Doc: "network interface whose address each rank listens on and advertises; empty picks the first non-loopback interface that is up, else loopback",
	}
	AllReduceAlgo = &Var[string]{
		Name: "MSCCLPP_ALLREDUCE_ALGO", Default: "auto", parse: parseChoice("auto", "packet", "packet2", "ll128", "rsag", "oneshot", "direct", "rsag_direct", "rsag_port", "port"),
		Doc: "AllReduce algorithm: auto (by size, rank count and registration), packet (one-shot LL packets), packet2 (two-shot LL packets), ll128 (one-shot LL128 lines), rsag (reduce-scatter + all-gather rounds), oneshot (every input copied into every peer's scratch, then reduced by every rank), direct or rsag_direct (zero-copy, registered buffers only), rsag_port (rsag with the all-gather on the copy engines; registered buffers with port channels only), port (every transfer on the copy engines, the SMs only reducing; registered send and receive buffers with port channels only); for experiments",
	}
	AllGatherAlgo = &Var[string]{
		Name: "MSCCLPP_ALLGATHER_ALGO", Default: "auto", parse: parseChoice("auto", "packet", "ll128", "put", "direct", "port"),
		Doc: "AllGather algorithm: auto (by size, rank count and registration), packet (LL packets), ll128 (LL128 lines), put (copies and signals), direct (zero-copy, registered receive buffers only) or port (zero-copy through the copy engines, registered receive buffers only); for experiments",
	}
	BroadcastAlgo = &Var[string]{
		Name: "MSCCLPP_BROADCAST_ALGO", Default: "auto", parse: parseChoice("auto", "packet", "ll128", "put", "sag", "ring"),
		Doc: "Broadcast algorithm: auto (by size and rank count), packet (LL packets), ll128 (a chain in LL128 lines; 2 or more ranks), put (the root copies into every peer's scratch), sag (the root scatters, the others all-gather; 3 to 64 ranks) or ring (a chain from the root, each rank storing to the next; 3 or more ranks); one that does not fit the call falls back to auto; for experiments",
	}
	CollMaxSpins = &Var[int64]{
		Name: "MSCCLPP_COLL_MAX_SPINS", Default: 1 << 30, parse: parseSpins,
		Doc: "polls a collective's kernel makes of one flag or semaphore for a peer before it gives up (the kernel ends, the CUDA context unharmed, and the communicator reports a timeout instead of hanging on a frozen peer; the default is minutes); 1 to 2^40 (about a thousand times the default), or -1 to wait for ever; read when a collective communicator is created",
	}
	CollMaxBlocks = &Var[int64]{
		Name: "MSCCLPP_COLL_MAX_BLOCKS", Default: 0, parse: parseBlocks,
		Doc: "the most thread blocks one collective call launches, 2 to 1024 (a call launches at most 128 blocks anyway), to leave SMs to other kernels or to let the calls of several collective communicators that overlap on a GPU all fit at once; 0, the default, sets no limit beyond the GPUs' own; the ranks use the smallest limit any of them sets; read when a collective communicator is created",
	}
	ProxyTrace = &Var[int64]{
		Name: "MSCCLPP_PROXY_TRACE", Default: 0, parse: parseFlushes,
		Doc: "for diagnosis: the copy-engine proxies time every copy on the GPU and log, at each of their first N flushes, when each copy since the previous one started and how long it took (level INFO); 0, the default, times nothing; at most 1000000",
	}
	CUDALibrary = &Var[string]{
		Name: "MSCCLPP_CUDA_LIBRARY", Default: "libcuda.so.1", parse: parseString,
		Doc: "the CUDA driver library to dlopen: a file name searched the usual way, or a path",
	}
	FabricLibrary = &Var[string]{
		Name: "MSCCLPP_FABRIC_LIBRARY", Default: "libfabric.so.1", parse: parseString,
		Doc: "the libfabric library to dlopen when a network or shared-memory connection is first asked for: a file name searched the usual way, or a path",
	}
	NetProvider = &Var[string]{
		Name: "MSCCLPP_NET_PROVIDER", Default: "", parse: parseString,
		Doc: "the libfabric provider of network connections (tcp, verbs, efa, cxi, ...); empty picks the first of verbs, efa, cxi, tcp that the machine offers",
	}
	NetDomain = &Var[string]{
		Name: "MSCCLPP_NET_DOMAIN", Default: "", parse: parseString,
		Doc: "the libfabric domain (NIC or interface, as fi_info names it: mlx5_0, eth0, lo) of network connections; empty lets the provider choose",
	}
	NetIfname = &Var[string]{
		Name: "MSCCLPP_NET_IFNAME", Default: "", parse: parseString,
		Doc: "the network interface (eth0, ib0, lo) whose NIC network connections use when MSCCLPP_NET_DOMAIN names none: tcp takes the interface as its domain, verbs and efa the RDMA device behind it (sysfs); MSCCLPP_HCA_DEVICES is then not consulted",
	}
	HcaDevices = &Var[string]{
		Name: "MSCCLPP_HCA_DEVICES", Default: "", parse: parseString,
		Doc: "the RDMA devices (verbs or efa domains, comma-separated: mlx5_0,mlx5_1) network connections may use; each rank takes the one nearest its GPU on the PCI tree; empty: every device the provider offers. MSCCLPP_NET_DOMAIN wins over it",
	}
	NetTimeout = &Var[time.Duration]{
		Name: "MSCCLPP_NET_TIMEOUT", Default: 30 * time.Second, parse: parseSeconds(MaxTimeout),
		Doc: "how long a write over libfabric may wait for the provider to take it (a peer that stopped, a full queue that never drains), and a signal for a free source word, before it fails with a timeout naming the peer, and how long a collective call across hosts waits with nothing moving with a peer; 1 to 86400 seconds (a day: no write should wait longer, and larger values would overflow)",
	}
	BootstrapMaxPending = &Var[int64]{
		Name: "MSCCLPP_BOOTSTRAP_MAX_PENDING", Default: 2 << 30, parse: parsePending,
		Doc: "the most bytes a rank holds from one peer that no Recv has taken yet (messages sent ahead of their receives); a peer that sends past it fails its connection with a named error, so a stranger or a runaway peer cannot grow the rank's memory without bound; 64 MiB to 1 TiB, default 2 GiB (two messages of the 1 GiB frame limit)",
	}
	BootstrapKey = &Var[string]{
		Name: "MSCCLPP_BOOTSTRAP_KEY", Default: "", parse: parseString, Secret: true,
		Doc: "a secret every rank of an ip:port job sets alike, mixed into the job's handshake, so that a process that knows only the address can neither join nor talk to the ranks; empty: the handshake comes from the address alone (any process that can reach it can); never logged; unique-id jobs carry a random secret of their own",
	}
	HostID = &Var[string]{
		Name: "MSCCLPP_HOSTID", Default: "", parse: parseString,
		Doc: "this process's host identity; processes with different values act as separate hosts (their connections take the network, not CUDA IPC, and collectives over them the path across hosts); empty: the host name and boot id",
	}
)

// Describer is what docs generation and the docs test need of a Var.
type Describer interface {
	Describe() string
}

// All lists every tunable, in the order docs/CONFIG.md shows them.
func All() []Describer {
	return []Describer{NCCLLibrary, Debug, BootstrapTimeout, SocketIfname, CUDALibrary, AllReduceAlgo, AllGatherAlgo,
		BroadcastAlgo, CollMaxSpins, CollMaxBlocks, ProxyTrace, FabricLibrary, NetProvider, NetDomain, NetIfname, HcaDevices, NetTimeout, HostID, BootstrapKey,
		BootstrapMaxPending}
}
