// Package errs holds the error classes every layer of the library shares, and OpError, which says
// which operation failed on which rank, against which peer.
//
// Each package defines its own specific sentinels (bootstrap.ErrBadMagic, cuda.ErrNoDevice, ...)
// by wrapping one of the classes here, so a caller can match either the specific error or its
// class with errors.Is. The C ABI maps the classes, and only the classes, to mscclppResult_t.
package errs
