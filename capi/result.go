package main

/*
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/core/legacy"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// toResult is the one place where Go errors become mscclppResult_t codes.
func toResult(err error) C.mscclppResult_t {
	if err == nil {
		return C.mscclppSuccess
	}
	switch errs.Class(err) {
	case errs.ErrInvalidArgument:
		return C.mscclppInvalidArgument
	case errs.ErrInvalidUsage:
		return C.mscclppInvalidUsage
	case errs.ErrCUDA:
		return C.mscclppUnhandledCudaError
	case errs.ErrSystem:
		return C.mscclppSystemError
	case errs.ErrRemote:
		return C.mscclppRemoteError
	default:
		return C.mscclppInternalError
	}
}

// invalidArg and invalidUsage build the errors of the argument checks done here.
func invalidArg(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errs.ErrInvalidArgument}, args...)...)
}

func invalidUsage(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errs.ErrInvalidUsage}, args...)...)
}

var setupOnce sync.Once

// setup runs once, on the first call into the library: library lines go through C's stdout
// until the program installs its own handler.
func setup() {
	setupOnce.Do(func() { logging.SetSink(stdoutSink) })
}

// call runs one export's body: it recovers panics, logs the reason for a refusal or failure, and
// maps the error to a result code.
func call(op string, body func() error) C.mscclppResult_t {
	return run(op, logging.Logger, body)
}

// callComm is call for exports that act on a communicator: it looks the handle up first, and logs
// through the communicator's logger, whose lines carry its rank.
func callComm(op string, comm C.mscclppComm_t, body func(c *legacy.Comm) error) C.mscclppResult_t {
	log := logging.Logger()
	return run(op, func() *slog.Logger { return log }, func() error {
		c, err := lookupComm(comm)
		if err != nil {
			return err
		}
		log = c.Logger()
		return body(c)
	})
}

func run(op string, logger func() *slog.Logger, body func() error) (res C.mscclppResult_t) {
	defer func() {
		if p := recover(); p != nil {
			logger().Error("panic in C API call; please report this bug",
				"op", op, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			res = C.mscclppInternalError
		}
	}()
	setup()
	err := body()
	if err != nil {
		logger().Warn(op+" failed", "err", err)
	}
	return toResult(err)
}

// errorStrings holds the C strings mscclppGetErrorString returns. They are allocated once and live
// as long as the library.
var errorStrings = sync.OnceValue(func() map[C.mscclppResult_t]*C.char {
	m := map[C.mscclppResult_t]*C.char{}
	for code, s := range map[C.mscclppResult_t]string{
		C.mscclppSuccess:            "no error",
		C.mscclppUnhandledCudaError: "unhandled CUDA error (run with MSCCLPP_DEBUG=INFO for details)",
		C.mscclppSystemError:        "system error (a socket, timeout or OS call failed)",
		C.mscclppInternalError:      "internal error (a bug in the library)",
		C.mscclppInvalidArgument:    "invalid argument",
		C.mscclppInvalidUsage:       "invalid usage",
		C.mscclppRemoteError:        "remote error (a peer failed, went away or disagreed)",
		C.mscclppInProgress:         "operation in progress",
	} {
		m[code] = C.CString(s)
	}
	m[C.mscclppNumResults] = C.CString("unknown result code")
	return m
})

//export mscclppGetErrorString
func mscclppGetErrorString(result C.mscclppResult_t) (s *C.char) {
	defer func() {
		if p := recover(); p != nil {
			s = nil
		}
	}()
	if s, ok := errorStrings()[result]; ok && result != C.mscclppNumResults {
		return s
	}
	return errorStrings()[C.mscclppNumResults]
}
