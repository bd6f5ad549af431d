package fabric

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// Errors of the package, each in one of the classes of package errs.
var (
	// ErrUnavailable: libfabric is missing, or offers no provider this library can use.
	ErrUnavailable = errs.New(errs.ErrSystem, "libfabric not available")
	// ErrFabric: a libfabric call failed.
	ErrFabric = errs.New(errs.ErrSystem, "libfabric error")
	// ErrClosed: the endpoint was closed.
	ErrClosed = errs.New(errs.ErrInvalidUsage, "fabric endpoint is closed")
	// ErrTimedOut: the provider did not take a write or a message, or no source buffer for one
	// came free, within MSCCLPP_NET_TIMEOUT.
	ErrTimedOut = errs.New(errs.ErrSystem, "libfabric write timed out")
)

// load loads libfabric once.
var load = sync.OnceValue(func() error {
	path := config.FabricLibrary.Get()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var msg [512]C.char
	if C.mscclpp_fab_load(cpath, &msg[0], C.size_t(len(msg))) != 0 {
		return fmt.Errorf("%w: %s (install libfabric1, or set MSCCLPP_FABRIC_LIBRARY)", ErrUnavailable, C.GoString(&msg[0]))
	}
	return nil
})

// fabricError wraps a negative libfabric return code with the call that returned it.
func fabricError(op string, code C.int) error {
	n := -int(code)
	return fmt.Errorf("%w: %s: %s (%d)", ErrFabric, op, C.GoString(C.mscclpp_fab_strerror(C.int(n))), n)
}

// Version returns the loaded libfabric's API version.
func Version() (major, minor int, err error) {
	if err := load(); err != nil {
		return 0, 0, err
	}
	v := uint32(C.mscclpp_fab_version())
	return int(v >> 16), int(v & 0xffff), nil
}

// Providers lists the providers that offer what an Endpoint needs, in libfabric's order. The
// list is read once per process.
func Providers() ([]string, error) { return providers() }

var providers = sync.OnceValues(func() ([]string, error) { return list("", C.MSCCLPP_FAB_LIST_PROVIDERS) })

// Domains lists the domains (NICs such as mlx5_0, or interfaces such as eth0 for tcp) that the
// provider offers for an Endpoint; a core provider's name also means a layered one over it.
func Domains(provider string) ([]string, error) {
	return list(resolve(provider), C.MSCCLPP_FAB_LIST_DOMAINS)
}

// list asks libfabric for the providers or the domains (what) that offer an Endpoint, of the
// given provider ("" for any).
func list(provider string, what C.int) ([]string, error) {
	if err := load(); err != nil {
		return nil, err
	}
	var cprov *C.char
	if provider != "" {
		cprov = C.CString(provider)
		defer C.free(unsafe.Pointer(cprov))
	}
	var out [4096]C.char
	if r := C.mscclpp_fab_list(cprov, what, &out[0], C.size_t(len(out))); r != 0 {
		return nil, fabricError("fi_getinfo", r)
	}
	s := C.GoString(&out[0])
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, ","), nil
}

// networkPreference is the order in which NetworkProvider picks a provider.
var networkPreference = []string{"verbs", "efa", "cxi", "tcp"}

// NetworkProvider returns the provider of network connections: MSCCLPP_NET_PROVIDER if set (it
// must be one that libfabric offers here), else the first of verbs, efa, cxi and tcp that the
// machine offers. Layered providers count by their core (verbs for "verbs;ofi_rxm").
func NetworkProvider() (string, error) {
	have, err := Providers()
	if err != nil {
		return "", err
	}
	if p := config.NetProvider.Get(); p != "" {
		if !Has(p) {
			return "", fmt.Errorf("%w: MSCCLPP_NET_PROVIDER=%s, which libfabric does not offer here (it offers %v)", ErrUnavailable, p, have)
		}
		return p, nil
	}
	for _, want := range networkPreference {
		for _, p := range have {
			if p == want || strings.HasPrefix(p, want+";") {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w: no network provider among %v (wanted one of %v)", ErrUnavailable, have, networkPreference)
}

// Peer is a peer's address in an endpoint's address vector.
type Peer uint64

// valueSlots is how many 8-byte source words WriteValue cycles through. A write's completion
// context is 0 for data and valueContext|slot for a value, so that a slot is reused only once
// the write that read it has completed, whatever order completions come in.
const (
	valueSlots   = 1024
	valueContext = 1 << 63
	// recvContext|slot and sendContext|slot are the contexts of a message buffer's receive and
	// send (message.go).
	recvContext = 1 << 62
	sendContext = 1 << 61
)

// Endpoint is one RDM endpoint with its completion queue and address vector. Its methods are
// safe for concurrent use.
type Endpoint struct {
	mu        sync.Mutex
	c         *C.struct_mscclpp_fab_ep
	provider  string
	domain    string
	virtAddr  bool
	maxMsg    uint64
	maxWrite  uint64 // the most one post of Write carries
	posted    uint64 // writes posted
	completed uint64 // of which completed
	failure   error  // the first completion error; the endpoint is unusable after it

	values    *Region // valueSlots words in C memory: the sources of WriteValue
	valueBase unsafe.Pointer
	valueBusy [valueSlots]bool // slot read by a write that has not completed
	valueNext uint64           // the slot WriteValue tries next

	polled *pollBuffers // poll's buffers, kept so that a poll allocates nothing (e.mu)

	msgs    *messages  // set by EnableMessages
	deliver sync.Mutex // held while messages are handed to the handler, so that they go in order

	remoteData bool              // the provider carries 8 bytes of remote CQ data
	hmem       bool              // the provider offers the endpoint with FI_HMEM (HMEM)
	devMemory  bool              // opened with FI_HMEM: GPU memory registers (OpenDeviceMemory)
	onData     func(data uint64) // handles the peers' remote CQ data (SetDataHandler; e.mu)
	dropped    uint64            // remote CQ data that came before a handler was set (e.mu)
}

// resolve returns the available provider that name means: name itself, or else the first layered
// provider over it ("tcp" means "tcp;ofi_rxm" where libfabric offers RDM over tcp only through
// rxm). Names it cannot resolve are returned as they are.
func resolve(name string) string {
	have, err := Providers()
	if err != nil || name == "" || slices.Contains(have, name) {
		return name
	}
	for _, p := range have {
		if strings.HasPrefix(p, name+";") {
			return p
		}
	}
	return name
}

// Open opens an RDM endpoint of the given provider ("" for libfabric's first choice; a core
// provider's name, such as "tcp", also means a layered provider over it, such as
// "tcp;ofi_rxm") on the given domain ("" for the provider's choice).
func Open(provider, domain string) (*Endpoint, error) { return open(provider, domain, 0) }

// OpenDeviceMemory is Open for an endpoint that also registers GPU memory with the provider
// (FI_HMEM, FI_MR_HMEM: RegisterCUDA), where the provider offers that (HMEM); ErrUnavailable
// where it does not.
func OpenDeviceMemory(provider, domain string) (*Endpoint, error) {
	return open(provider, domain, C.MSCCLPP_FAB_OPEN_HMEM)
}

func open(provider, domain string, flags C.int) (*Endpoint, error) {
	if err := load(); err != nil {
		return nil, err
	}
	provider = resolve(provider)
	var cprov, cdom *C.char
	if provider != "" {
		cprov = C.CString(provider)
		defer C.free(unsafe.Pointer(cprov))
	}
	if domain != "" {
		cdom = C.CString(domain)
		defer C.free(unsafe.Pointer(cdom))
	}
	var c *C.struct_mscclpp_fab_ep
	var where *C.char
	if r := C.mscclpp_fab_open(cprov, cdom, flags, &c, &where); r != 0 {
		err := fabricError(C.GoString(where), r)
		if r == -C.int(C.FI_ENODATA) {
			avail, _ := Providers()
			what := "ordered RMA writes"
			if flags&C.MSCCLPP_FAB_OPEN_HMEM != 0 {
				what += " and device memory (FI_HMEM)"
			}
			err = fmt.Errorf("%w: provider %q (domain %q) offers no RDM endpoint with %s; available: %v", ErrUnavailable, provider, domain, what, avail)
			if domains, derr := Domains(provider); domain != "" && derr == nil && len(domains) > 0 && !slices.Contains(domains, domain) {
				err = fmt.Errorf("%w: provider %q has no domain %q; its domains: %v", ErrUnavailable, provider, domain, domains)
			}
		}
		return nil, err
	}
	e := &Endpoint{
		c:          c,
		provider:   C.GoString(C.mscclpp_fab_provider_name(c)),
		domain:     C.GoString(C.mscclpp_fab_domain_name(c)),
		virtAddr:   C.mscclpp_fab_virt_addr(c) != 0,
		maxMsg:     uint64(C.mscclpp_fab_max_msg(c)),
		polled:     new(pollBuffers),
		remoteData: C.mscclpp_fab_remote_data(c) != 0,
		devMemory:  flags&C.MSCCLPP_FAB_OPEN_HMEM != 0,
	}
	e.hmem = e.devMemory || C.mscclpp_fab_hmem(c) > 0 // opened with FI_HMEM, no need to ask
	if e.maxMsg == 0 {
		e.maxMsg = 1 << 30
	}
	e.maxWrite = e.maxMsg
	if !strings.HasPrefix(e.provider, "shm") {
		e.maxWrite = min(e.maxMsg, writeChunkBytes)
	}
	e.valueBase = C.calloc(valueSlots, 8)
	if e.valueBase == nil {
		C.mscclpp_fab_close(c)
		return nil, fmt.Errorf("%w: allocate the signal words", ErrFabric)
	}
	var err error
	if e.values, err = e.Register(uint64(uintptr(e.valueBase)), valueSlots*8); err != nil {
		C.free(e.valueBase)
		C.mscclpp_fab_close(c)
		return nil, err
	}
	return e, nil
}

// Provider is the endpoint's provider, as libfabric names it (e.g. "tcp", "verbs;ofi_rxm").
func (e *Endpoint) Provider() string { return e.provider }

// Domain is the endpoint's domain (NIC or interface).
func (e *Endpoint) Domain() string { return e.domain }

// HMEM reports whether the provider offers this endpoint with FI_HMEM: device memory (a GPU's)
// registered with it directly (OpenDeviceMemory, then RegisterCUDA). Register takes host memory
// only. core's transport stages GPU memory through host buffers either way (it does not open
// endpoints for device memory yet), and says which it could do when it opens.
func (e *Endpoint) HMEM() bool { return e.hmem }

// DeviceMemory reports whether the endpoint registers GPU memory (OpenDeviceMemory).
func (e *Endpoint) DeviceMemory() bool { return e.devMemory }

func (e *Endpoint) String() string {
	return fmt.Sprintf("libfabric %s endpoint on %s", e.provider, e.domain)
}

// Address returns the endpoint's address, for a peer's AddPeer.
func (e *Endpoint) Address() ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return nil, ErrClosed
	}
	buf := make([]byte, 256)
	n := C.size_t(len(buf))
	if r := C.mscclpp_fab_name(e.c, unsafe.Pointer(&buf[0]), &n); r != 0 {
		return nil, fabricError("fi_getname", r)
	}
	return buf[:n], nil
}

// AddPeer adds a peer's address (its Address) to the address vector.
func (e *Endpoint) AddPeer(addr []byte) (Peer, error) {
	if len(addr) == 0 {
		return 0, fmt.Errorf("add peer: empty address: %w", errs.ErrInvalidArgument)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return 0, ErrClosed
	}
	c := C.CBytes(addr)
	defer C.free(c)
	var a C.uint64_t
	if r := C.mscclpp_fab_insert(e.c, c, &a); r != 0 {
		return 0, fabricError("fi_av_insert", r)
	}
	return Peer(a), nil
}

// Region is memory registered with an endpoint: a source of its writes and a target of its
// peers'.
type Region struct {
	mr   *C.struct_mscclpp_fab_mr
	Addr uint64 // where the memory starts in this process
	Size uint64
	Key  uint64 // the key a peer's writes name it by
}

// Remote is a peer's registered memory, as the peer described it.
type Remote struct {
	Addr uint64 // where it starts in the peer's process
	Size uint64
	Key  uint64
}

// Remote describes r for a peer.
func (r *Region) Remote() Remote { return Remote{Addr: r.Addr, Size: r.Size, Key: r.Key} }

// Register registers size bytes of host memory at addr (memory that Go's collector does not
// move: C allocations, mmap) for writes from and into it.
func (e *Endpoint) Register(addr, size uint64) (*Region, error) {
	if addr == 0 || size == 0 {
		return nil, fmt.Errorf("register %d bytes at %#x: %w", size, addr, errs.ErrInvalidArgument)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return nil, ErrClosed
	}
	r := &Region{Addr: addr, Size: size}
	var key C.uint64_t
	var where *C.char
	if rc := C.mscclpp_fab_reg(e.c, C.uint64_t(addr), C.size_t(size), 0, &r.mr, &key, &where); rc != 0 {
		return nil, fmt.Errorf("register %d bytes at %#x with %v: %w", size, addr, e, fabricError(C.GoString(where), rc))
	}
	r.Key = uint64(key)
	return r, nil
}

// RegisterCUDA registers size bytes of CUDA device memory at addr, on the GPU of ordinal
// device, for this endpoint's writes from it and the peers' writes into it: the provider moves
// them without staging through host memory. The endpoint must come from OpenDeviceMemory.
func (e *Endpoint) RegisterCUDA(addr, size uint64, device int) (*Region, error) {
	if addr == 0 || size == 0 || device < 0 {
		return nil, fmt.Errorf("register %d bytes of GPU %d's memory at %#x: %w", size, device, addr, errs.ErrInvalidArgument)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return nil, ErrClosed
	}
	if !e.devMemory {
		return nil, fmt.Errorf("register GPU memory with %v, opened without device memory (OpenDeviceMemory): %w", e, ErrUnavailable)
	}
	r := &Region{Addr: addr, Size: size}
	var key C.uint64_t
	var where *C.char
	if rc := C.mscclpp_fab_reg_cuda(e.c, C.uint64_t(addr), C.size_t(size), C.int(device), &r.mr, &key, &where); rc != 0 {
		return nil, fmt.Errorf("register %d bytes of GPU %d's memory at %#x with %v: %w", size, device, addr, e, fabricError(C.GoString(where), rc))
	}
	r.Key = uint64(key)
	return r, nil
}

// Deregister releases the registration.
func (r *Region) Deregister() error {
	if r.mr == nil {
		return nil
	}
	rc := C.mscclpp_fab_unreg(r.mr)
	r.mr = nil
	if rc != 0 {
		return fabricError("fi_close (memory region)", rc)
	}
	return nil
}

// writeChunkBytes is the most one post of Write carries on every provider but shm. On tcp (through
// rxm) one post of 1-64 MiB moved 2.2-3.2 GB/s and posts of 256 KiB 3.3-5.7 GB/s in the same
// ping-pong (development VM, 2026-11-27; why is not profiled). On shm the same cut gained
// nothing, so shm posts what the provider takes.
const writeChunkBytes = 256 << 10

// Write posts a write of n bytes from src at srcOff to the peer's dst at dstOff, cut into posts
// of at most writeChunkBytes (shm: of what the provider takes). It returns once the writes are
// posted; Flush waits for them. Writes of one endpoint land in the order they were posted.
func (e *Endpoint) Write(peer Peer, src *Region, srcOff uint64, dst Remote, dstOff, n uint64) error {
	if err := checkWrite(src, srcOff, dst, dstOff, n); err != nil || n == 0 {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	srcOff, dstOff, n, err := e.postLeading(peer, src, srcOff, dst, dstOff, n)
	if err != nil {
		return err
	}
	return e.post(peer, src, srcOff, dst, dstOff, n)
}

// checkWrite refuses a write of n bytes from src at srcOff to dst at dstOff outside either region.
func checkWrite(src *Region, srcOff uint64, dst Remote, dstOff, n uint64) error {
	switch {
	case srcOff > src.Size || n > src.Size-srcOff:
		return fmt.Errorf("write %d bytes from offset %d of a %d-byte region: %w", n, srcOff, src.Size, errs.ErrInvalidArgument)
	case dstOff > dst.Size || n > dst.Size-dstOff:
		return fmt.Errorf("write %d bytes to offset %d of the peer's %d-byte region: %w", n, dstOff, dst.Size, errs.ErrInvalidArgument)
	}
	return nil
}

// postLeading posts all but the last post of a write of n bytes (posts of at most e.maxWrite) and
// returns where the last one starts and its length. e.mu is held.
func (e *Endpoint) postLeading(peer Peer, src *Region, srcOff uint64, dst Remote, dstOff, n uint64) (uint64, uint64, uint64, error) {
	for n > e.maxWrite {
		if err := e.post(peer, src, srcOff, dst, dstOff, e.maxWrite); err != nil {
			return 0, 0, 0, err
		}
		srcOff, dstOff, n = srcOff+e.maxWrite, dstOff+e.maxWrite, n-e.maxWrite
	}
	return srcOff, dstOff, n, nil
}

// WriteValue posts, after every write posted before it, an 8-byte write of value to the peer's
// dst at dstOff: a signal. Its source is one of valueSlots words, each reused once the write
// that read it has completed; when every word is still in flight (a peer that stopped
// progressing) it waits for one for at most MSCCLPP_NET_TIMEOUT, then fails with ErrTimedOut.
func (e *Endpoint) WriteValue(peer Peer, dst Remote, dstOff, value uint64) error {
	if dstOff > dst.Size || 8 > dst.Size-dstOff {
		return fmt.Errorf("write 8 bytes to offset %d of the peer's %d-byte region: %w", dstOff, dst.Size, errs.ErrInvalidArgument)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	// The source word must stay as written until its write completes: reuse a slot only once
	// the write that read it before has completed, waiting for that for at most
	// MSCCLPP_NET_TIMEOUT.
	slot := e.valueNext % valueSlots
	var wait patience
	for e.valueBusy[slot] {
		if e.c == nil {
			return ErrClosed
		}
		if err := e.poll(); err != nil {
			return err
		}
		if e.valueBusy[slot] && wait.exhausted() {
			return fmt.Errorf("%v: a signal to peer %d waited for a source word (of %d, reused in turn) that did not come free within %v (MSCCLPP_NET_TIMEOUT; does the peer still progress?): %w",
				e, peer, valueSlots, config.NetTimeout.Get(), ErrTimedOut)
		}
	}
	e.valueNext++
	*(*uint64)(unsafe.Add(e.valueBase, slot*8)) = value
	if err := e.postWith(peer, e.values, slot*8, dst, dstOff, 8, valueContext|slot); err != nil {
		return err
	}
	e.valueBusy[slot] = true
	return nil
}

// RemoteData reports whether the endpoint carries 8 bytes of remote CQ data (WriteData): the
// provider's cq_data_size.
func (e *Endpoint) RemoteData() bool { return e.remoteData }

// SetDataHandler makes handle receive the remote CQ data of the peers' WriteData, in the order
// the endpoint's completion queue reports them (for one peer, the order it posted them, on the
// providers this package uses: tcp and shm), from whichever goroutine polls. It runs with the
// endpoint's lock held: it must not call the endpoint. Data that come before a handler is set
// are dropped and counted (DroppedData).
func (e *Endpoint) SetDataHandler(handle func(data uint64)) error {
	if !e.remoteData {
		return fmt.Errorf("%v carries no remote CQ data: %w", e, ErrUnavailable)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.onData = handle
	return nil
}

// DroppedData is the number of remote CQ data dropped because no handler was set.
func (e *Endpoint) DroppedData() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.dropped
}

// WriteData posts a write of n bytes (n may be 0) from src at srcOff to the peer's dst at
// dstOff whose completion at the peer carries data (its data handler gets it once the bytes have
// landed), after every write posted before it; a write longer than one post goes in posts of
// which the last carries data. src may be nil when n is 0. It returns once posted; Flush waits
// for it.
func (e *Endpoint) WriteData(peer Peer, src *Region, srcOff uint64, dst Remote, dstOff, n, data uint64) error {
	if src == nil && n == 0 {
		src, srcOff = e.values, 0
	}
	if src == nil {
		return fmt.Errorf("write %d bytes from no region: %w", n, errs.ErrInvalidArgument)
	}
	if err := checkWrite(src, srcOff, dst, dstOff, n); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.remoteData {
		return fmt.Errorf("write with remote data on %v: %w", e, ErrUnavailable)
	}
	srcOff, dstOff, n, err := e.postLeading(peer, src, srcOff, dst, dstOff, n)
	if err != nil {
		return err
	}
	raddr := e.remoteAddr(dst, dstOff)
	if err := e.retry("fi_writedata", func() string { return fmt.Sprintf("a write of %d bytes with data to peer %d", n, peer) }, func() C.ssize_t {
		return C.mscclpp_fab_writedata(e.c, C.uint64_t(src.Addr+srcOff), C.size_t(n), src.mr, C.uint64_t(peer),
			C.uint64_t(raddr), C.uint64_t(dst.Key), C.uint64_t(data), 0)
	}); err != nil {
		return err
	}
	e.posted++
	return nil
}

// remoteAddr is what a write to off in dst names at the peer: the virtual address where the
// provider wants one (FI_MR_VIRT_ADDR), else the offset.
func (e *Endpoint) remoteAddr(dst Remote, off uint64) uint64 {
	if e.virtAddr {
		return dst.Addr + off
	}
	return off
}

// post posts one write of data. e.mu is held.
func (e *Endpoint) post(peer Peer, src *Region, srcOff uint64, dst Remote, dstOff, n uint64) error {
	return e.postWith(peer, src, srcOff, dst, dstOff, n, 0)
}

// postWith posts one write whose completion carries ctx. e.mu is held.
func (e *Endpoint) postWith(peer Peer, src *Region, srcOff uint64, dst Remote, dstOff, n, ctx uint64) error {
	raddr := e.remoteAddr(dst, dstOff)
	if err := e.retry("fi_write", func() string { return fmt.Sprintf("a write of %d bytes to peer %d", n, peer) }, func() C.ssize_t {
		return C.mscclpp_fab_write(e.c, C.uint64_t(src.Addr+srcOff), C.size_t(n), src.mr, C.uint64_t(peer),
			C.uint64_t(raddr), C.uint64_t(dst.Key), C.uint64_t(ctx))
	}); err != nil {
		return err
	}
	e.posted++
	return nil
}

// Progress reads the completions there are and lets the provider move data, incoming writes
// included (providers with manual progress move them only then).
func (e *Endpoint) Progress() error {
	e.mu.Lock()
	if e.c == nil {
		e.mu.Unlock()
		return ErrClosed
	}
	err := e.poll()
	msgs := e.msgs != nil
	e.mu.Unlock()
	if err != nil || !msgs { // without messages there is nothing to deliver
		return err
	}
	return e.deliverMessages()
}

// pollBuffers are what one poll of the completion queue fills: the completions' contexts and
// lengths, and an error's text.
type pollBuffers struct {
	ctxs, lens, datas [64]C.uint64_t
	msg               [256]C.char
}

// poll reads completions: of writes and sends (counted, their source slots freed) and of
// messages received (queued for deliverMessages). e.mu is held.
func (e *Endpoint) poll() error {
	b := e.polled
	ctxs, lens, datas, msg := b.ctxs[:], b.lens[:], b.datas[:], b.msg[:]
	for {
		n := C.mscclpp_fab_poll(e.c, &ctxs[0], &lens[0], &datas[0], C.size_t(len(ctxs)), &msg[0], C.size_t(len(msg)))
		if n < 0 {
			if e.failure == nil {
				e.failure = fmt.Errorf("%v: a write failed: %s: %w", e, C.GoString(&msg[0]), fabricError("fi_cq_read", C.int(n)))
			}
			return e.failure
		}
		for i, ctx := range ctxs[:n] {
			switch {
			case ctx == C.MSCCLPP_FAB_REMOTE_DATA: // a peer's write with data, no write of ours
				if e.onData != nil {
					e.onData(uint64(datas[i]))
				} else {
					e.dropped++
				}
				continue
			case ctx&recvContext != 0:
				e.msgs.received(uint64(ctx)&^recvContext, uint64(lens[i]))
				continue // a receive is no write of ours
			case ctx&sendContext != 0:
				e.msgs.sendBusy[uint64(ctx)&^sendContext] = false
			case ctx&valueContext != 0:
				e.valueBusy[uint64(ctx)&^valueContext] = false
			}
			e.completed++
		}
		if n < C.ssize_t(len(ctxs)) {
			return nil
		}
	}
}

// Posted is the number of writes posted so far; it changes whenever the endpoint sends.
func (e *Endpoint) Posted() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.posted
}

// Pending is the number of writes posted and not yet completed.
func (e *Endpoint) Pending() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.posted - e.completed
}

// Flush waits until every write posted so far has completed (its data is at the peer), or ctx
// ends.
func (e *Endpoint) Flush(ctx context.Context) error {
	e.mu.Lock()
	target := e.posted
	e.mu.Unlock()
	for spins := 0; ; spins++ {
		e.mu.Lock()
		if e.c == nil {
			e.mu.Unlock()
			return ErrClosed
		}
		err := e.poll()
		done := e.completed >= target
		e.mu.Unlock()
		if err == nil {
			// A peer's message may wait for a receive buffer that only delivery frees.
			err = e.deliverMessages()
		}
		if err != nil || done {
			return err
		}
		if spins > 1000 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("%v: flush: %w", e, err)
			}
			time.Sleep(time.Microsecond)
		}
	}
}

// Close closes the endpoint; writes in flight are dropped.
func (e *Endpoint) Close() error {
	e.deliver.Lock() // a message being handled keeps its buffer until the handler returns
	defer e.deliver.Unlock()
	e.mu.Lock()
	m := e.msgs
	e.mu.Unlock()
	var heldErr error
	if m != nil { // without e.mu: a handler's done may still write to a peer
		heldErr = m.awaitHeld()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.c == nil {
		return ErrClosed
	}
	err := e.values.Deregister()
	msgErr := heldErr
	if e.msgs != nil {
		msgErr = errors.Join(msgErr, e.msgs.release())
	}
	C.mscclpp_fab_close(e.c)
	C.free(e.valueBase)
	if e.msgs != nil {
		msgErr = errors.Join(msgErr, e.msgs.free())
	}
	e.c, e.valueBase = nil, nil
	return errors.Join(err, msgErr)
}

// Has reports whether the provider name (or a layered provider over it) is available.
func Has(name string) bool {
	p, err := Providers()
	return err == nil && slices.Contains(p, resolve(name))
}
