package logging

import (
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// assertSlogPristine fails when slog's default logger is not the one the process started with.
// slog.SetDefault, wherever it ran (this package's init included, which runs before any test),
// replaces the default handler, whose type is then no longer slog's own, and points the log
// package's output into slog instead of standard error.
func assertSlogPristine(t *testing.T) {
	t.Helper()
	assert.Equal(t, "*slog.defaultHandler", fmt.Sprintf("%T", slog.Default().Handler()),
		"slog.SetDefault was called: the library must keep its logger to itself")
	assert.Same(t, os.Stderr, log.Writer(), "the log package no longer writes to standard error")
	assert.Equal(t, log.LstdFlags, log.Flags(), "the log package's flags changed")
}

// TestInitLeavesSlogDefault: after the package's init (which hooks the configuration variables to
// the library's logger), slog's default logger is still the process's own.
func TestInitLeavesSlogDefault(t *testing.T) {
	assertSlogPristine(t)
}

// TestLoggingLeavesSlogDefault: every way the library sets up and uses its logger leaves slog's
// default logger, its handler and the log package as they were.
func TestLoggingLeavesSlogDefault(t *testing.T) {
	tests := []struct {
		name  string
		quiet bool // logs nothing to the library's sink
		run   func(t *testing.T)
	}{
		{"init's hook", true, func(t *testing.T) { config.SetLogger(Logger) }},
		{"first Logger call", false, func(t *testing.T) {
			initLog = sync.Once{} // run the lazy set-up again
			Logger().Warn("first line")
		}},
		{"ForRank", false, func(t *testing.T) { ForRank(2).Warn("rank line", "peer", 3) }},
		{"With and WithGroup", false, func(t *testing.T) {
			Logger().With("a", 1).WithGroup("g").Warn("grouped", "b", 2)
		}},
		{"level change", false, func(t *testing.T) {
			withLevel(t, config.LevelTrace)
			ForRank(0).Log(t.Context(), LevelTrace, "trace line")
			assert.Equal(t, LevelTrace, Level())
		}},
		{"level from the environment", false, func(t *testing.T) {
			t.Setenv(config.Debug.Name, "INFO")
			config.Debug.Reset()
			t.Cleanup(config.Debug.Reset)
			assert.Equal(t, slog.LevelInfo, Level())
			Logger().Info("info line")
		}},
		{"malformed variable reported", false, func(t *testing.T) {
			t.Setenv(config.CollMaxSpins.Name, "lots")
			config.CollMaxSpins.Reset()
			t.Cleanup(config.CollMaxSpins.Reset)
			config.CollMaxSpins.Get()
		}},
		{"sink set and restored", true, func(t *testing.T) {
			SetSink(func(string) {})
			Logger().Warn("to the sink")
			SetSink(nil)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := capture(t)
			before := slog.Default()
			handler := before.Handler()

			tc.run(t)

			assert.Same(t, before, slog.Default(), "slog's default logger was replaced")
			assert.Equal(t, handler, slog.Default().Handler(), "slog's default handler was replaced")
			assertSlogPristine(t)
			if !tc.quiet {
				require.NotEmpty(t, got(), "the line should reach the library's sink")
			}
		})
	}
}
