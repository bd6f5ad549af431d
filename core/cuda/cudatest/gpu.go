package cudatest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// RequireGPUs skips the test unless the machine has at least n GPUs; it fails it when the driver
// reports something other than "no driver" or "no device".
func RequireGPUs(t *testing.T, n int) {
	t.Helper()
	count, err := cuda.DeviceCount()
	if errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrDriverNotFound) {
		t.Skipf("no GPU: %v", err)
	}
	require.NoError(t, err)
	if count < n {
		t.Skipf("%d GPU(s), the test needs %d", count, n)
	}
}

// PrimaryContext returns the primary context of GPU ordinal, released when the test ends, or
// skips the test where there is no such GPU (RequireGPUs).
func PrimaryContext(t *testing.T, ordinal int) cuda.Context {
	t.Helper()
	RequireGPUs(t, ordinal+1)
	dev, err := cuda.GetDevice(ordinal)
	require.NoError(t, err)
	ctx, err := dev.RetainPrimaryContext()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ctx.Release()) })
	return ctx
}
