package logging

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// capture installs a sink that records lines and restores stdout when the test ends.
func capture(t *testing.T) func() []string {
	t.Helper()
	var mu sync.Mutex
	var lines []string
	SetSink(func(l string) { mu.Lock(); lines = append(lines, l); mu.Unlock() })
	t.Cleanup(func() { SetSink(nil) })
	return func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), lines...) }
}

func withLevel(t *testing.T, level string) {
	t.Helper()
	testutil.Override(t, config.Debug, level)
}

func TestLineCarriesHostPidRank(t *testing.T) {
	withLevel(t, config.LevelWarn)
	got := capture(t)
	host, err := os.Hostname()
	require.NoError(t, err)

	ForRank(3).Warn("peer closed", "peer", 5, "err", errors.New("EOF here"))
	Logger().Warn("no rank yet")

	lines := got()
	require.Len(t, lines, 2)
	wantPrefix := host + ":" + strconv.Itoa(os.Getpid())
	assert.Equal(t, wantPrefix+` [3] MSCCLPP WARN peer closed peer=5 err="EOF here"`, lines[0])
	assert.Equal(t, wantPrefix+` [-] MSCCLPP WARN no rank yet`, lines[1])
}

func TestLevels(t *testing.T) {
	tests := []struct {
		level               string
		info, trace, warned bool
	}{
		{config.LevelWarn, false, false, true},
		{config.LevelInfo, true, false, true},
		{config.LevelTrace, true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.level, func(t *testing.T) {
			withLevel(t, tc.level)
			got := capture(t)
			l := ForRank(0)
			l.Log(t.Context(), LevelTrace, "trace line")
			l.Info("info line")
			l.Warn("warn line")
			joined := strings.Join(got(), "\n")
			assert.Equal(t, tc.trace, strings.Contains(joined, "TRACE trace line"))
			assert.Equal(t, tc.info, strings.Contains(joined, "INFO info line"))
			assert.Equal(t, tc.warned, strings.Contains(joined, "WARN warn line"))
		})
	}
}

func TestGroups(t *testing.T) {
	withLevel(t, config.LevelInfo)
	got := capture(t)
	Logger().WithGroup("conn").Info("opened", "peer", 1, slog.Group("buf", "size", 64))
	lines := got()
	require.Len(t, lines, 1)
	assert.True(t, strings.HasSuffix(lines[0], "INFO opened conn.peer=1 conn.buf.size=64"), lines[0])
}

// TestSlogDefaultUntouched: the library's logger is not made slog's default (a library does not
// change its host's globals), and the configuration variables still report through it.
func TestSlogDefaultUntouched(t *testing.T) {
	before := slog.Default()
	withLevel(t, config.LevelInfo)
	got := capture(t)
	Logger().Info("library line")
	assert.Same(t, before, slog.Default())

	t.Setenv(config.CollMaxSpins.Name, "not-a-number")
	config.CollMaxSpins.Reset()
	t.Cleanup(config.CollMaxSpins.Reset)
	assert.Equal(t, config.CollMaxSpins.Default, config.CollMaxSpins.Get())
	t.Setenv(config.BootstrapTimeout.Name, "9999999999") // out of range: once a negative duration
	config.BootstrapTimeout.Reset()
	t.Cleanup(config.BootstrapTimeout.Reset)
	assert.Equal(t, config.BootstrapTimeout.Default, config.BootstrapTimeout.Get())
	lines := got()
	require.Len(t, lines, 3, "%q", lines)
	assert.Contains(t, lines[0], "INFO library line")
	for i, name := range []string{config.CollMaxSpins.Name, config.BootstrapTimeout.Name} {
		assert.Contains(t, lines[1+i], "WARN environment variable out of range or malformed")
		assert.Contains(t, lines[1+i], name)
	}
}
