package main

import (
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// ncclDataType and ncclRedOp are NCCL's ncclDataType_t and ncclRedOp_t values.
type (
	ncclDataType int
	ncclRedOp    int
)

const (
	ncclInt8     ncclDataType = 0
	ncclUint8    ncclDataType = 1
	ncclInt32    ncclDataType = 2
	ncclUint32   ncclDataType = 3
	ncclInt64    ncclDataType = 4
	ncclUint64   ncclDataType = 5
	ncclFloat16  ncclDataType = 6
	ncclFloat32  ncclDataType = 7
	ncclFloat64  ncclDataType = 8
	ncclBfloat16 ncclDataType = 9
)

const (
	ncclSum  ncclRedOp = 0
	ncclProd ncclRedOp = 1
	ncclMax  ncclRedOp = 2
	ncclMin  ncclRedOp = 3
)

// errNCCLNotFound: dlopen of the NCCL library failed. The error's text carries dlerror's.
var errNCCLNotFound = errors.New("NCCL not found")

// errNCCLLacks: the loaded library does not define a function a call needs (its text is followed
// by the function's name).
var errNCCLLacks = errors.New("this NCCL has no")

// ncclOptional lists, per collective, the functions it calls that an NCCL-compatible library may
// lack, with the NCCL release that added them.
var ncclOptional = map[string][]struct{ name, since string }{
	opAlltoAll: {{"ncclAlltoAll", "2.28"}},
	opSendRecv: {{"ncclGroupStart", "2.0"}, {"ncclSend", "2.7"}, {"ncclRecv", "2.7"}, {"ncclGroupEnd", "2.0"}},
}

// ncclSupport returns an error naming the first function the collective needs that has(name)
// says the library at path (of version code version) lacks.
func ncclSupport(collective, path string, version int, has func(name string) bool) error {
	for _, f := range ncclOptional[collective] {
		if !has(f.name) {
			return fmt.Errorf("-op %s: %w %s (NCCL %s, %s; NCCL %s added it)", collective, errNCCLLacks, f.name,
				versionString(version), path, f.since)
		}
	}
	return nil
}

// ncclError is a failed NCCL call.
type ncclError struct {
	op   string
	code int
	msg  string
}

func (e *ncclError) Error() string {
	return fmt.Sprintf("%s: %s (ncclResult_t %d)", e.op, e.msg, e.code)
}

var nccl struct {
	once    sync.Once
	path    string
	version int
	err     error
}

// ncclLibOption is --nccl-lib; main sets it before the first loadNCCL.
var ncclLibOption string

// ncclLibraryPath is the file loadNCCL dlopens: --nccl-lib, else MSCCLPP_NCCL_LIBRARY (see
// internal/config).
func ncclLibraryPath() string {
	if ncclLibOption != "" {
		return ncclLibOption
	}
	return config.NCCLLibrary.Get()
}

// thisProjectsLayer reports whether the file at path is this project's NCCL layer (it defines
// mscclppNcclLayer, nccl/env.c): it links libmscclpp.so, whose Go runtime cannot be loaded into
// this Go program. Files that cannot be read as ELF are left to dlopen to judge.
func thisProjectsLayer(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return false
	}
	for _, s := range syms {
		if s.Name == "mscclppNcclLayer" {
			return true
		}
	}
	return false
}

// loadNCCL loads NCCL on first use and caches the outcome for the life of the process. It makes
// sure NVLink multicast (NVLS) stays off first: see ensureNVLSOff.
func loadNCCL() (version int, err error) {
	nccl.once.Do(func() {
		if nccl.err = ensureNVLSOff(); nccl.err != nil {
			return
		}
		nccl.path = ncclLibraryPath()
		if nccl.err = openNCCL(nccl.path); nccl.err != nil {
			return
		}
		nccl.version, nccl.err = ncclGetVersion()
	})
	return nccl.version, nccl.err
}

// openNCCL dlopens path and resolves the functions the benchmark calls.
func openNCCL(path string) error {
	if thisProjectsLayer(path) {
		return fmt.Errorf("%s is this project's NCCL layer, which carries a Go runtime that a Go program cannot load: "+
			"compare it with bench/nccl_overhead instead", path)
	}
	switch code, msg := ncclOpen(path); code {
	case 0:
		return nil
	case -1:
		return fmt.Errorf("%w: %s", errNCCLNotFound, msg)
	default:
		return fmt.Errorf("NCCL library %s is unusable: %s", path, msg)
	}
}

// ensureNVLSOff sets NCCL_NVLS_ENABLE=0 when it is unset and refuses any other value: NVLink
// multicast must stay off on the shared GPU hosts. It must run before NCCL is loaded (NCCL reads
// the environment through getenv; with cgo, os.Setenv also sets the C environment).
func ensureNVLSOff() error {
	v, ok := os.LookupEnv("NCCL_NVLS_ENABLE")
	if !ok {
		return os.Setenv("NCCL_NVLS_ENABLE", "0")
	}
	if v != "0" {
		return fmt.Errorf("NCCL_NVLS_ENABLE=%q: NVLink multicast must stay off; unset it or set NCCL_NVLS_ENABLE=0", v)
	}
	return nil
}

// versionString turns ncclGetVersion's code into "major.minor.patch".
func versionString(code int) string {
	if code >= 10000 { // NCCL >= 2.9: major*10000 + minor*100 + patch
		return fmt.Sprintf("%d.%d.%d", code/10000, code/100%100, code%100)
	}
	return fmt.Sprintf("%d.%d.%d", code/1000, code/100%10, code%100)
}
