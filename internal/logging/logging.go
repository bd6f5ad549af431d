package logging

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// LevelTrace is MSCCLPP_DEBUG=TRACE: per-message detail, below slog.LevelDebug.
const LevelTrace = slog.Level(-8)

// RankKey is the attribute key that carries the rank; ForRank sets it.
const RankKey = "rank"

// Sink receives one formatted line, without a trailing newline.
type Sink func(line string)

// StdoutSink writes the line and a newline to standard output.
func StdoutSink(line string) { fmt.Fprintln(os.Stdout, line) }

var (
	sink    atomic.Pointer[Sink]
	initLog sync.Once
	base    *slog.Logger
	prefix  string // "host:pid"
)

// SetSink sends every later line to s; nil restores StdoutSink.
func SetSink(s Sink) {
	if s == nil {
		sink.Store(nil)
		return
	}
	sink.Store(&s)
}

func emit(line string) {
	if s := sink.Load(); s != nil {
		(*s)(line)
		return
	}
	StdoutSink(line)
}

// The configuration variables report through the library's logger.
func init() { config.SetLogger(Logger) }

// Logger returns the library's logger. It is not made slog's default: a library does not change
// its host program's globals.
func Logger() *slog.Logger {
	initLog.Do(func() {
		host, err := os.Hostname()
		if err != nil {
			host = "unknown-host"
		}
		prefix = host + ":" + strconv.Itoa(os.Getpid())
		base = slog.New(&handler{})
	})
	return base
}

// ForRank returns a logger whose lines carry the given rank.
func ForRank(rank int) *slog.Logger { return Logger().With(RankKey, rank) }

// Level returns the level MSCCLPP_DEBUG asks for.
func Level() slog.Level {
	switch config.Debug.Get() {
	case config.LevelTrace:
		return LevelTrace
	case config.LevelInfo:
		return slog.LevelInfo
	default:
		return slog.LevelWarn
	}
}

func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARN"
	case l >= slog.LevelInfo:
		return "INFO"
	case l >= slog.LevelDebug:
		return "DEBUG"
	default:
		return "TRACE"
	}
}

// handler formats records as documented in the package comment.
type handler struct {
	rank  string // "-" until ForRank sets it
	attrs []byte // preformatted " key=value" pairs from With
	group string // dotted prefix from WithGroup
}

func (h *handler) Enabled(_ context.Context, l slog.Level) bool { return l >= Level() }

func (h *handler) Handle(_ context.Context, r slog.Record) error {
	rank := h.rank
	if rank == "" {
		rank = "-"
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s [%s] MSCCLPP %s %s", prefix, rank, levelName(r.Level), r.Message)
	b.Write(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	emit(b.String())
	return nil
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append([]byte(nil), h.attrs...)
	for _, a := range as {
		if a.Key == RankKey && h.group == "" {
			n.rank = a.Value.String()
			continue
		}
		var b bytes.Buffer
		appendAttr(&b, h.group, a)
		n.attrs = append(n.attrs, b.Bytes()...)
	}
	return &n
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	n := *h
	n.group = h.group + name + "."
	return &n
}

func appendAttr(b *bytes.Buffer, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		for _, g := range a.Value.Group() {
			appendAttr(b, group+a.Key+".", g)
		}
		return
	}
	v := a.Value.String()
	if needsQuote(v) {
		v = strconv.Quote(v)
	}
	fmt.Fprintf(b, " %s%s=%s", group, a.Key, v)
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, c := range s {
		if c <= ' ' || c == '"' || c == '=' || c > '~' {
			return true
		}
	}
	return false
}
