package core

// sched_setaffinity takes a pointer to the CPU mask; this file passes one through unsafe.Pointer.

import (
	"syscall"
	"unsafe"
)

// setThreadAffinity restricts the calling OS thread (thread id 0 means "this thread") to mask.
func setThreadAffinity(mask []uint64) error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0,
		uintptr(len(mask)*8), uintptr(unsafe.Pointer(&mask[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
