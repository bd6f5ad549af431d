package config

import (
	"bytes"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envAtStart is the environment as the test binary started, before any test read a variable.
var envAtStart = sortedEnviron()

func sortedEnviron() []string { return slices.Sorted(slices.Values(os.Environ())) }

// readers calls Get on every tunable, keyed by variable name. TestLoadingLeavesProcessUntouched
// checks that it covers All(), so a new variable cannot be left out.
var readers = map[string]func(){
	NCCLLibrary.Name:         func() { NCCLLibrary.Get() },
	Debug.Name:               func() { Debug.Get() },
	BootstrapTimeout.Name:    func() { BootstrapTimeout.Get() },
	SocketIfname.Name:        func() { SocketIfname.Get() },
	CUDALibrary.Name:         func() { CUDALibrary.Get() },
	AllReduceAlgo.Name:       func() { AllReduceAlgo.Get() },
	AllGatherAlgo.Name:       func() { AllGatherAlgo.Get() },
	BroadcastAlgo.Name:       func() { BroadcastAlgo.Get() },
	CollMaxSpins.Name:        func() { CollMaxSpins.Get() },
	CollMaxBlocks.Name:       func() { CollMaxBlocks.Get() },
	ProxyTrace.Name:          func() { ProxyTrace.Get() },
	FabricLibrary.Name:       func() { FabricLibrary.Get() },
	NetProvider.Name:         func() { NetProvider.Get() },
	NetDomain.Name:           func() { NetDomain.Get() },
	NetIfname.Name:           func() { NetIfname.Get() },
	HcaDevices.Name:          func() { HcaDevices.Get() },
	NetTimeout.Name:          func() { NetTimeout.Get() },
	HostID.Name:              func() { HostID.Get() },
	BootstrapKey.Name:        func() { BootstrapKey.Get() },
	BootstrapMaxPending.Name: func() { BootstrapMaxPending.Get() },
}

// resetters drops every tunable's cached value and override.
var resetters = []func(){
	NCCLLibrary.Reset, Debug.Reset, BootstrapTimeout.Reset, SocketIfname.Reset, CUDALibrary.Reset,
	AllReduceAlgo.Reset, AllGatherAlgo.Reset, BroadcastAlgo.Reset, CollMaxSpins.Reset, CollMaxBlocks.Reset, ProxyTrace.Reset,
	FabricLibrary.Reset, NetProvider.Reset, NetDomain.Reset, NetIfname.Reset, HcaDevices.Reset, NetTimeout.Reset, HostID.Reset, BootstrapKey.Reset,
	BootstrapMaxPending.Reset,
}

func resetAll() {
	for _, r := range resetters {
		r()
	}
}

// TestLoadingLeavesProcessUntouched: reading the configuration, with the variables unset, valid or
// malformed (which logs a warning), with overrides, and through the logger hook, changes neither
// the process environment nor slog's default logger. The library owns neither.
func TestLoadingLeavesProcessUntouched(t *testing.T) {
	// Tests that ran before this one read the variables too (and set them with t.Setenv, which
	// restores them): a change made once, on a first read, shows here.
	require.Equal(t, envAtStart, sortedEnviron(), "the environment changed since the tests started")

	names := make([]string, 0, len(All()))
	for _, v := range All() {
		names = append(names, strings.SplitN(v.Describe(), " ", 2)[0])
	}
	for _, n := range names {
		require.Contains(t, readers, n, "readers must call Get on %s", n)
	}
	require.Len(t, readers, len(names))
	require.Len(t, resetters, len(names))

	tests := []struct {
		name string
		env  map[string]string // variables set for the case; the others are unset
		hook bool              // report through a logger given to SetLogger, as package logging does
	}{
		{name: "unset"},
		{name: "valid", hook: true, env: map[string]string{
			Debug.Name: "info", BootstrapTimeout.Name: "7", SocketIfname.Name: "lo",
			NCCLLibrary.Name: "libnccl.so.2", CUDALibrary.Name: "libcuda.so.1",
			AllReduceAlgo.Name: "rsag", AllGatherAlgo.Name: "put", BroadcastAlgo.Name: "ring", CollMaxSpins.Name: "1000",
			CollMaxBlocks.Name: "16", ProxyTrace.Name: "2",
		}},
		{name: "malformed", hook: true, env: map[string]string{
			Debug.Name: "loud", BootstrapTimeout.Name: "soon", AllReduceAlgo.Name: "fastest",
			AllGatherAlgo.Name: "fastest", BroadcastAlgo.Name: "fastest", CollMaxSpins.Name: "lots", CollMaxBlocks.Name: "1",
			ProxyTrace.Name: "all",
		}},
		// Without the hook the reports go to slog.Default(): written to, never replaced.
		{name: "malformed, reported to slog's default", env: map[string]string{CollMaxSpins.Name: "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range names {
				if val, ok := tc.env[n]; ok {
					t.Setenv(n, val)
				} else {
					t.Setenv(n, "") // restores the variable afterwards ...
					require.NoError(t, os.Unsetenv(n))
				}
			}
			var logged bytes.Buffer
			if tc.hook {
				prev := loggerFunc.Load()
				SetLogger(func() *slog.Logger { return slog.New(slog.NewTextHandler(&logged, nil)) })
				t.Cleanup(func() { loggerFunc.Store(prev) })
			}
			resetAll()
			t.Cleanup(resetAll)

			envBefore := sortedEnviron()
			defaultBefore := slog.Default()
			handlerBefore := defaultBefore.Handler()

			for _, n := range names {
				readers[n]()
			}
			BootstrapTimeout.Set(BootstrapTimeout.Get()) // an override, as mscclppSetBootstrapConnTimeout sets
			for _, n := range names {
				readers[n]() // a second read: cached, the overrides announced once
			}

			assert.Equal(t, envBefore, sortedEnviron(), "the environment changed")
			assert.Same(t, defaultBefore, slog.Default(), "slog's default logger was replaced")
			assert.Equal(t, handlerBefore, slog.Default().Handler(), "slog's default handler was replaced")
			if tc.hook && len(tc.env) > 0 {
				assert.NotEmpty(t, logged.String(), "the reports should go through SetLogger's logger")
			}
		})
	}
}
