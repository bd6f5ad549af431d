// Package abi reports what a C++ compiler makes of the legacy headers in include/: the size,
// alignment and field offsets of every struct of mscclpp.h and mscclppfifo.h, the values of their
// enumerations and macros, and where each bit-field of mscclppTrigger lands; and the same for the
// device handles of include/mscclpp/*_device.h and their trigger macros (MSCCLPP_TRIGGER_*).
//
// It exists so that the Go mirrors of those structs (legacy.DevConn, fifo.Trigger, the device
// handles of package channels, ...) and the trigger encoders can be tested against the real
// headers rather than against numbers copied by hand: cgo is not allowed in _test.go files, so
// the C++ side lives in this ordinary package and the layout tests of the mirroring packages
// import it. Nothing else in the library should import it, and cgo stays confined here.
//
// Entry names are the C expressions that yield the values, such as
// "sizeof(mscclppDevConn)", "offsetof(mscclppBaseConn, tag)", "mscclppInvalidUsage" or
// "MSCCLPP_PROXY_FIFO_SIZE". Trigger bit-fields get three pseudo-expressions each:
// "bitword(mscclppTrigger.fields.connId)" (the index into value[] of the word that holds the
// field's lowest bit), "bitshift(...)" (that bit's position in the word) and "bitwidth(...)"
// (how many bits the field occupies).
package abi
