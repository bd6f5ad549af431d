package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// The library's variables (MSCCLPP_DEBUG, MSCCLPP_COLL_MAX_BLOCKS, ...) are read from the C
// environment, so that a program's setenv after the library loaded still counts, as with NCCL.
func init() { config.ReadEnvironmentWith(lookupCEnv) }

// lookupCEnv is os.LookupEnv over the C environment (getenv).
func lookupCEnv(name string) (string, bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	v := C.getenv(cname)
	if v == nil {
		return "", false
	}
	return C.GoString(v), true
}
