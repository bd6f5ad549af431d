package abi

import (
	"fmt"
	"strings"
	"testing"
)

// Mirror pairs a number of the C headers, named as LegacyLayout names it, with the Go value that
// must equal it.
type Mirror struct {
	CName   string
	GoValue uint64
}

// CheckMirrors fails t for every mirror whose Go value differs from the C one (or whose C name is
// unknown), and logs the whole table, so that `go test -v` prints the layout.
func CheckMirrors(t testing.TB, mirrors []Mirror) {
	t.Helper()
	var table strings.Builder
	fmt.Fprintf(&table, "\n%-56s %8s %8s\n", "C", "C value", "Go value")
	for _, m := range mirrors {
		cValue, ok := Lookup(m.CName)
		if !ok {
			t.Errorf("internal/abi has no entry %q", m.CName)
			continue
		}
		fmt.Fprintf(&table, "%-56s %8d %8d\n", m.CName, cValue, m.GoValue)
		if cValue != m.GoValue {
			t.Errorf("%s = %d in C, %d in Go", m.CName, cValue, m.GoValue)
		}
	}
	t.Log(table.String())
}
