package config

import (
	"bytes"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDocsListEveryVariable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/CONFIG.md")
	require.NoError(t, err)
	for _, v := range All() {
		name := strings.SplitN(v.Describe(), " ", 2)[0]
		assert.Contains(t, string(doc), "`"+name+"`", "docs/CONFIG.md must document %s", name)
	}
}

// setEnv sets v's environment variable to env for the test and drops v's cached value, before
// and after, so that v.Get reads env now and the next test starts clean.
func setEnv[T any](t *testing.T, v *Var[T], env string) {
	t.Helper()
	t.Setenv(v.Name, env)
	v.Reset()
	t.Cleanup(v.Reset)
}

func TestTimeoutFromEnvironment(t *testing.T) {
	tests := []struct {
		env  string
		want time.Duration
	}{
		{"", 30 * time.Second},
		{"5", 5 * time.Second},
		{" 12 ", 12 * time.Second},
		{"0", 30 * time.Second},    // not positive: default
		{"-3", 30 * time.Second},   // not positive: default
		{"soon", 30 * time.Second}, // malformed: default
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			setEnv(t, BootstrapTimeout, tc.env)
			assert.Equal(t, tc.want, BootstrapTimeout.Get())
		})
	}
}

func TestSetOverridesEnvironment(t *testing.T) {
	setEnv(t, BootstrapTimeout, "5")
	BootstrapTimeout.Set(2 * time.Second)
	assert.Equal(t, 2*time.Second, BootstrapTimeout.Get())
	BootstrapTimeout.Reset()
	assert.Equal(t, 5*time.Second, BootstrapTimeout.Get())
}

func TestDebugLevels(t *testing.T) {
	tests := map[string]string{"": LevelWarn, "info": LevelInfo, "TRACE": LevelTrace, "loud": LevelWarn, "VERSION": LevelWarn}
	for env, want := range tests {
		t.Run(env, func(t *testing.T) {
			setEnv(t, Debug, env)
			assert.Equal(t, want, Debug.Get())
		})
	}
}

func TestCollMaxSpins(t *testing.T) {
	tests := []struct {
		env  string
		want int64
	}{
		{"", 1 << 30},
		{"1000", 1000},
		{" 4194304 ", 1 << 22},
		{"-1", -1},        // no bound
		{"0", 1 << 30},    // would trap at once: default
		{"-2", 1 << 30},   // negative but not -1: default
		{"lots", 1 << 30}, // malformed: default
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			setEnv(t, CollMaxSpins, tc.env)
			assert.Equal(t, tc.want, CollMaxSpins.Get())
		})
	}
}

func TestProxyTrace(t *testing.T) {
	tests := []struct {
		env  string
		want int64
	}{
		{"", 0},
		{"0", 0},
		{" 2 ", 2},
		{"-1", 0},  // negative: default
		{"all", 0}, // malformed: default
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			setEnv(t, ProxyTrace, tc.env)
			assert.Equal(t, tc.want, ProxyTrace.Get())
		})
	}
}

func TestCollMaxBlocks(t *testing.T) {
	tests := []struct {
		env  string
		want int64
	}{
		{"", 0},
		{"0", 0},
		{"2", 2},
		{" 16 ", 16},
		{"1", 0},  // a grid needs 2 blocks: default
		{"-4", 0}, // default
		{"many", 0},
	}
	for _, tc := range tests {
		t.Run(tc.env, func(t *testing.T) {
			setEnv(t, CollMaxBlocks, tc.env)
			assert.Equal(t, tc.want, CollMaxBlocks.Get())
		})
	}
}

// TestReadEnvironmentWith: a Var reads its variable through the lookup the C library installs
// (a getenv of the C environment), not through Go's copy of the environment.
func TestReadEnvironmentWith(t *testing.T) {
	t.Setenv(CollMaxBlocks.Name, "8") // Go's copy: must not be what Get returns
	ReadEnvironmentWith(func(name string) (string, bool) {
		if name == CollMaxBlocks.Name {
			return "24", true
		}
		return "", false
	})
	t.Cleanup(func() { ReadEnvironmentWith(os.LookupEnv) })
	CollMaxBlocks.Reset()
	t.Cleanup(CollMaxBlocks.Reset)
	assert.Equal(t, int64(24), CollMaxBlocks.Get())
}

// probe reads one variable whatever its type.
type probe struct {
	name  string
	get   func() any
	reset func()
}

func probeOf[T any](v *Var[T]) probe {
	return probe{v.Name, func() any { return v.Get() }, v.Reset}
}

// TestNumericBounds: every numeric variable takes the values within its documented bounds, with
// an INFO override line; a value outside them, one too large for any integer (which used to wrap
// to a negative or tiny timeout) or a malformed one gives the default and a WARN line naming the
// variable, through the logger SetLogger set.
func TestNumericBounds(t *testing.T) {
	bootstrap, net := probeOf(BootstrapTimeout), probeOf(NetTimeout)
	spins, blocks, trace := probeOf(CollMaxSpins), probeOf(CollMaxBlocks), probeOf(ProxyTrace)
	tests := []struct {
		v    probe
		env  string
		want any
		warn bool // out of range or malformed: the default, with a WARN
	}{
		{bootstrap, "1", time.Second, false},
		{bootstrap, "86400", 24 * time.Hour, false},
		{bootstrap, "86401", 30 * time.Second, true},
		{bootstrap, "9999999999", 30 * time.Second, true},  // was a negative duration
		{bootstrap, "18446744074", 30 * time.Second, true}, // was 0.29 s
		{bootstrap, "99999999999999999999", 30 * time.Second, true},
		{bootstrap, "0", 30 * time.Second, true},
		{bootstrap, "1.5", 30 * time.Second, true},
		{net, "86400", 24 * time.Hour, false},
		{net, "9999999999", 30 * time.Second, true},
		{net, "-1", 30 * time.Second, true},
		{spins, "1099511627776", int64(1 << 40), false},
		{spins, "1099511627777", int64(1 << 30), true},
		{spins, "9223372036854775807", int64(1 << 30), true},
		{spins, "9223372036854775808", int64(1 << 30), true},
		{spins, "-1", int64(-1), false},
		{blocks, "1024", int64(1024), false},
		{blocks, "1025", int64(0), true},
		{blocks, "4294967298", int64(0), true}, // 2 in the 32 bits the ranks exchange
		{trace, "1000000", int64(1000000), false},
		{trace, "1000001", int64(0), true},
		{trace, "18446744073709551615", int64(0), true},
	}
	for _, tc := range tests {
		t.Run(tc.v.name+"="+tc.env, func(t *testing.T) {
			var logged bytes.Buffer
			prev := loggerFunc.Load()
			SetLogger(func() *slog.Logger {
				return slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			t.Cleanup(func() { loggerFunc.Store(prev) })
			t.Setenv(tc.v.name, tc.env)
			tc.v.reset()
			t.Cleanup(tc.v.reset)

			assert.Equal(t, tc.want, tc.v.get())
			tc.v.get() // cached: logs nothing more
			lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
			require.Len(t, lines, 1, "one line per variable: %q", logged.String())
			assert.Contains(t, lines[0], "var="+tc.v.name)
			if tc.warn {
				assert.Contains(t, lines[0], "level=WARN")
				assert.Contains(t, lines[0], "out of range or malformed")
			} else {
				assert.Contains(t, lines[0], "level=INFO")
				assert.Contains(t, lines[0], "environment override")
			}
		})
	}
}

// TestSecretNotLogged: the override line of a secret variable (MSCCLPP_BOOTSTRAP_KEY) says it is
// set, never its value.
func TestSecretNotLogged(t *testing.T) {
	var logged bytes.Buffer
	prev := loggerFunc.Load()
	SetLogger(func() *slog.Logger {
		return slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	t.Cleanup(func() { loggerFunc.Store(prev) })
	t.Setenv(BootstrapKey.Name, "topsecret")
	BootstrapKey.Reset()
	t.Cleanup(BootstrapKey.Reset)
	assert.Equal(t, "topsecret", BootstrapKey.Get())
	assert.Contains(t, logged.String(), "MSCCLPP_BOOTSTRAP_KEY")
	assert.Contains(t, logged.String(), "not shown")
	assert.NotContains(t, logged.String(), "topsecret")
}
