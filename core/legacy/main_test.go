package legacy

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test of the package ends with no goroutine left behind (bootstraps, proxies).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
