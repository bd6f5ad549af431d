package testutil

import (
	"testing"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// Override sets the configuration variable v to x (config.Var.Set) until tb and its cleanups end,
// then drops the override (config.Var.Reset).
func Override[T any](tb testing.TB, v *config.Var[T], x T) {
	tb.Helper()
	v.Set(x)
	tb.Cleanup(v.Reset)
}
