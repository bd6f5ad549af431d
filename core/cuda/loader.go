package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// versionEntry is the entry point the loader resolves and calls first: the driver version decides
// which of the others to look for.
const versionEntry = "cuDriverGetVersion"

// entryPoints is the table entrypoints.h generates, in its order.
var entryPoints = sync.OnceValue(readEntryPoints)

// library is a loaded driver.
type library struct {
	path     string
	version  int    // cuDriverGetVersion, e.g. 12020 for CUDA 12.2
	resolved []bool // resolved[i]: entryPoints()[i] was found
}

// loader loads the driver library once, then initializes the driver once.
type loader struct {
	library func() (*library, error)
	init    func() error
}

func newLoader() *loader {
	l := &loader{library: sync.OnceValues(loadLibrary)}
	l.init = sync.OnceValue(func() error {
		if _, err := l.library(); err != nil {
			return err
		}
		return cuInit()
	})
	return l
}

// driver is the process's loader. Tests replace it to load another library.
var driver = newLoader()

// loadLibrary opens the library MSCCLPP_CUDA_LIBRARY names and resolves the entry points.
func loadLibrary() (*library, error) {
	path := config.CUDALibrary.Get()
	// dlerror is per thread. shim.c keeps each dl call and its dlerror in one C call, which runs
	// on one thread anyway; holding the thread for the whole sequence keeps it that way if the
	// sequence ever spans calls.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if err := dlOpen(path); err != nil {
		msg := err.Error()
		if !strings.Contains(msg, path) {
			msg = path + ": " + msg
		}
		return nil, fmt.Errorf("%w: %s", ErrDriverNotFound, msg)
	}
	entries := entryPoints()
	vi := indexOf(entries, versionEntry)
	if vi < 0 {
		return nil, fmt.Errorf("%s missing from entrypoints.h: %w", versionEntry, errs.ErrInternal)
	}
	if err := dlResolve(vi); err != nil {
		return nil, fmt.Errorf("%s: not a CUDA driver: %v: %w", path, err, errs.ErrCUDA)
	}
	version, err := cuDriverGetVersion()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	resolved, err := resolveEntries(entries, version, func(i int) error {
		if i == vi {
			return nil
		}
		return dlResolve(i)
	})
	if err != nil {
		return nil, fmt.Errorf("%s (driver version %d): %w", path, version, err)
	}
	logging.Logger().Info("CUDA driver loaded", "path", path, "version", version)
	return &library{path: path, version: version, resolved: resolved}, nil
}

// resolveEntries looks up each entry the driver version allows with lookup(i) and reports which
// were found. A required entry that is missing, or that needs a newer driver, fails the load; an
// optional one is logged and left unresolved.
func resolveEntries(entries []entryPoint, version int, lookup func(i int) error) ([]bool, error) {
	resolved := make([]bool, len(entries))
	for i, e := range entries {
		if e.minVersion > version {
			if e.required {
				return nil, fmt.Errorf("%s needs driver version %d or later: %w", e.name, e.minVersion, errs.ErrCUDA)
			}
			logging.Logger().Info("CUDA entry point needs a newer driver", "name", e.name, "min_version", e.minVersion)
			continue
		}
		if err := lookup(i); err != nil {
			if e.required {
				return nil, fmt.Errorf("required entry point %s: %v: %w", e.symbol, err, errs.ErrCUDA)
			}
			logging.Logger().Info("optional CUDA entry point missing", "symbol", e.symbol, "err", err)
			continue
		}
		resolved[i] = true
	}
	return resolved, nil
}

func indexOf(entries []entryPoint, name string) int {
	for i, e := range entries {
		if e.name == name {
			return i
		}
	}
	return -1
}

// initDriver loads the library and runs cuInit once. Every call that needs more than the
// driver version goes through it.
func initDriver() error { return driver.init() }
