// Command capi is built with -buildmode=c-shared into libmscclpp.so. It is the only package with
// //export functions, and it is thin: each export checks its arguments, converts them, calls the
// Go packages, and maps the returned error to an mscclppResult_t through one switch (result.go).
//
// Rules every export follows:
//   - No Go panic crosses into C: each export recovers and returns mscclppInternalError.
//   - C never holds a Go pointer: a handle is a small C allocation that a Go table maps to the Go
//     object (handles.go; comm.go keeps the legacy communicators' side tables). A released
//     handle keeps its allocation, so it is refused, never reused.
//   - A refused call logs its reason at WARN through the library's log handler.
//   - The library's variables (MSCCLPP_*) are read from the C environment (env.go), so a setenv
//     the program makes after loading the library counts.
//
// The exported names and signatures are those of include/mscclpp.h, the legacy MSCCL++ 0.1 API,
// and of include/mscclpp/core.h, the primitive API (core_*.go; serialized structs in wire.go).
package main

func main() {}
