package core

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test of the package ends with no goroutine left behind (futures, bootstraps, proxies).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
