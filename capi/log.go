package main

/*
#include "capi.h"
*/
import "C"

import (
	"unsafe"

	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// stdoutSink is the default sink of a library loaded by a C program.
func stdoutSink(line string) {
	cs := C.CString(line + "\n")
	defer C.free(unsafe.Pointer(cs))
	C.capiWriteStdout(cs)
}

//export mscclppDefaultLogHandler
func mscclppDefaultLogHandler(msg *C.char) {
	defer func() { _ = recover() }()
	if msg != nil {
		C.capiWriteStdout(msg)
	}
}

//export mscclppSetLogHandler
func mscclppSetLogHandler(handler C.mscclppLogHandler_t) C.mscclppResult_t {
	return call("mscclppSetLogHandler", func() error {
		if handler == nil {
			return invalidArg("log handler is NULL")
		}
		// Each message ends with a newline, as the default handler expects.
		logging.SetSink(func(line string) {
			cs := C.CString(line + "\n")
			defer C.free(unsafe.Pointer(cs))
			C.capiCallLogHandler(handler, cs)
		})
		return nil
	})
}
