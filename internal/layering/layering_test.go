package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const (
	module   = "github.com/mscclpp-go/mscclpp"
	internal = module + "/internal/"
	core     = module + "/core"
)

// listed is what `go list -json` says of one package, test variant or test binary.
type listed struct {
	ImportPath string
	Deps       []string
}

// TestInternalImportsNoCore: `go list -test` of ./internal/... names no package of core among the
// dependencies (direct or not) of any package of internal/, or of its tests.
func TestInternalImportsNoCore(t *testing.T) {
	goCmd, err := exec.LookPath("go") // go test puts its own go first in PATH
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	out, err := exec.Command(goCmd, "list", "-test", "-json=ImportPath,Deps", internal+"...").Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Fatalf("go list: %v\n%s", err, exit.Stderr)
	}
	require.NoError(t, err)

	// found[pkg][dep]: whether pkg itself (true) or only its tests (false) depend on dep.
	found := map[string]map[string]bool{}
	seen := 0
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		err := dec.Decode(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if !strings.HasPrefix(p.ImportPath, internal) {
			continue
		}
		seen++
		// "pkg", "pkg [pkg.test]" (pkg built with its tests) or "pkg.test" (the test binary).
		pkg, _, _ := strings.Cut(p.ImportPath, " ")
		pkg = strings.TrimSuffix(pkg, ".test")
		for _, dep := range p.Deps {
			if dep == core || strings.HasPrefix(dep, core+"/") {
				if found[pkg] == nil {
					found[pkg] = map[string]bool{}
				}
				found[pkg][dep] = found[pkg][dep] || p.ImportPath == pkg
			}
		}
	}
	require.Positive(t, seen, "go list named no package of internal/")

	for _, pkg := range slices.Sorted(maps.Keys(found)) {
		for _, dep := range slices.Sorted(maps.Keys(found[pkg])) {
			who, verb := pkg, "imports"
			if !found[pkg][dep] {
				who, verb = pkg+"'s tests", "import"
			}
			t.Errorf("%s %s %s (directly or through another package): internal/ must not import core; "+
				"test helpers that need CUDA belong in core/cuda/cudatest", who, verb, dep)
		}
	}
}
