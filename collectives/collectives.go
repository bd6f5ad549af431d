package collectives

import (
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// AllReduce reduces count elements of type dt at send across all ranks with op and writes the
// result to recv on every rank (send == recv: in place). Queued on stream s; returns once queued.
// Every rank gets bit-identical results.
func (c *Comm) AllReduce(send, recv cuda.DevicePtr, count int, dt DataType, op Op, s cuda.Stream) error {
	// The call's description is formatted only for an error: calls are on the latency path.
	fail := func(err error) error { return fmt.Errorf("allreduce of %d %s (%s): %w", count, dt, op, err) }
	bytes, err := checkSameSized(send, recv, count, dt)
	if err == nil {
		err = checkReduction(dt, op)
	}
	if err != nil {
		return fail(err)
	}
	if count == 0 {
		return nil
	}
	if c.span != nil {
		return wrapFail(fail, c.spanCall(func() error { return c.span.allReduce(send, recv, count, dt, op, s) }))
	}
	forced, _ := forcedAlgorithms()
	x := call{kind: callAllReduce, args: c.args, local: recv, bytes: bytes,
		send: span{send, bytes}, recv: span{recv, bytes},
		choose: func(reg registered) plan {
			return chooseAllReduce(bytes, dt, op, c.nRanks, c.maxGrid, c.lines, reg, forced)
		}}
	x.args.Send, x.args.Recv, x.args.Count, x.args.Op = uintptr(send), uintptr(recv), uint64(count), uint64(op)
	if err := c.launch(&x, s); err != nil {
		return fail(err)
	}
	return nil
}

// AllGather gathers sendCount elements of type dt at send from every rank into recv, rank r's
// at element r*sendCount, on every rank. In place when send is this rank's part of recv. Queued
// on stream s; returns once queued.
func (c *Comm) AllGather(send, recv cuda.DevicePtr, sendCount int, dt DataType, s cuda.Stream) error {
	fail := func(err error) error { return fmt.Errorf("allgather of %d %s per rank: %w", sendCount, dt, err) }
	if err := checkCall(send, recv, sendCount, dt); err != nil {
		return fail(err)
	}
	bytes := uint64(sendCount) * uint64(dt.Size())
	mine := recv + cuda.DevicePtr(uint64(c.rank)*bytes)
	if send != mine && overlap(send, recv, bytes, bytes*uint64(c.nRanks)) {
		return fail(fmt.Errorf("the send buffer overlaps the receive buffer without being this rank's part of it: %w",
			errs.ErrInvalidArgument))
	}
	if sendCount == 0 {
		return nil
	}
	if c.span != nil {
		return wrapFail(fail, c.spanCall(func() error { return c.span.allGather(send, recv, sendCount, dt, s) }))
	}
	_, forced := forcedAlgorithms()
	x := call{kind: callAllGather, args: c.args, local: mine, bytes: bytes, recv: span{recv, bytes * uint64(c.nRanks)},
		choose: func(reg registered) plan {
			return chooseAllGather(bytes, c.nRanks, c.maxGrid, c.lines, reg, send == mine, forced)
		}}
	x.args.Send, x.args.Recv, x.args.Count = uintptr(send), uintptr(recv), bytes
	if err := c.launch(&x, s); err != nil {
		return fail(err)
	}
	return nil
}

// ReduceScatter reduces the recvCount elements of type dt at send + r*recvCount across all ranks
// with op and writes the result to recv on rank r: send holds nRanks*recvCount elements. In place
// when recv is this rank's part of send. Queued on stream s; returns once queued. Each rank
// reduces its part in rank order, as AllReduce does.
func (c *Comm) ReduceScatter(send, recv cuda.DevicePtr, recvCount int, dt DataType, op Op, s cuda.Stream) error {
	fail := func(err error) error {
		return fmt.Errorf("reducescatter of %d %s per rank (%s): %w", recvCount, dt, op, err)
	}
	if err := checkCall(send, recv, recvCount, dt); err != nil {
		return fail(err)
	}
	if err := checkReduction(dt, op); err != nil {
		return fail(err)
	}
	bytes := uint64(recvCount) * uint64(dt.Size())
	mine := send + cuda.DevicePtr(uint64(c.rank)*bytes)
	if recv != mine && overlap(send, recv, bytes*uint64(c.nRanks), bytes) {
		return fail(fmt.Errorf("the receive buffer overlaps the send buffer without being this rank's part of it: %w",
			errs.ErrInvalidArgument))
	}
	if recvCount == 0 {
		return nil
	}
	if c.span != nil {
		return wrapFail(fail, c.spanCall(func() error { return c.span.reduceScatter(send, recv, recvCount, dt, op, s) }))
	}
	// With one rank, launch copies from Send to local: this rank's part is the whole input.
	x := call{kind: callReduceScatter, args: c.args, local: recv, bytes: bytes,
		choose: func(registered) plan { return chooseReduceScatter(bytes, dt, op, c.nRanks, c.maxGrid) }}
	x.args.Send, x.args.Recv, x.args.Count, x.args.Op = uintptr(send), uintptr(recv), uint64(recvCount), uint64(op)
	if err := c.launch(&x, s); err != nil {
		return fail(err)
	}
	return nil
}

// Broadcast copies count elements of type dt at send on rank root to recv on every rank (send
// == recv: in place; the other ranks' send is not read). Queued on stream s; returns once queued.
func (c *Comm) Broadcast(send, recv cuda.DevicePtr, count int, dt DataType, root int, s cuda.Stream) error {
	fail := func(err error) error { return fmt.Errorf("broadcast of %d %s from rank %d: %w", count, dt, root, err) }
	if root < 0 || root >= c.nRanks {
		return fail(fmt.Errorf("root out of range [0, %d): %w", c.nRanks, errs.ErrInvalidArgument))
	}
	if c.rank != root {
		send = recv // not read: checked as recv
	}
	bytes, err := checkSameSized(send, recv, count, dt)
	if err != nil {
		return fail(err)
	}
	if count == 0 {
		return nil
	}
	if c.span != nil {
		return wrapFail(fail, c.spanCall(func() error { return c.span.broadcast(send, recv, count, dt, root, s) }))
	}
	forced := forcedBroadcast()
	x := call{kind: callBroadcast, args: c.args, local: recv, bytes: bytes,
		choose: func(registered) plan { return chooseBroadcast(bytes, c.nRanks, c.maxGrid, c.lines, forced) }}
	x.args.Send, x.args.Recv, x.args.Count, x.args.Op = uintptr(send), uintptr(recv), bytes, uint64(root)
	if err := c.launch(&x, s); err != nil {
		return fail(err)
	}
	return nil
}

// spanCall runs one call of the path across hosts under the launch lock, as launch does.
func (c *Comm) spanCall(run func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkUsable(); err != nil {
		return err
	}
	return run()
}

// wrapFail applies fail to err unless it is nil.
func wrapFail(fail func(error) error, err error) error {
	if err != nil {
		return fail(err)
	}
	return nil
}

// span is a byte range of a call's buffers.
type span struct {
	ptr  cuda.DevicePtr
	size uint64
}

// call is one collective, ready to launch but for the choice of its algorithm, which depends on
// the registrations.
type call struct {
	kind   callKind
	args   kernelArgs
	send   span                  // the send buffer, where zero-copy reads it (size 0: it does not)
	recv   span                  // the receive buffer
	choose func(registered) plan // the plan, given what the buffers' registrations allow
	local  cuda.DevicePtr        // with one rank: where args.Send's bytes go
	bytes  uint64
}

// launch queues the call's kernel; with one rank it only copies send to x.local (when they
// differ). The kernel launch is a single call into the driver layer, which makes the Comm's
// context current for it only when another one is.
func (c *Comm) launch(x *call, s cuda.Stream) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.checkUsable(); err != nil {
		return err
	}
	c.abort.lastCall.Store(uint32(x.kind))
	if c.nRanks == 1 {
		if cuda.DevicePtr(x.args.Send) == x.local {
			return nil
		}
		return c.onGPU(func() error { return cuda.MemcpyAsync(x.local, cuda.DevicePtr(x.args.Send), int(x.bytes), s) })
	}
	sendReg, recvReg := c.zeroCopyRegistrations(x)
	p := x.choose(registered{zeroCopy: recvReg != nil, copyEngine: recvReg != nil && recvReg.copyEngine,
		sendCopyEngine: sendReg != nil && sendReg.copyEngine})
	if p.zeroCopy() {
		var err error
		if sendReg != nil {
			if x.args.SendDesc, err = sendReg.descriptor(x.send.ptr); err != nil {
				return err
			}
		}
		if x.args.RecvDesc, err = recvReg.descriptor(x.recv.ptr); err != nil {
			return err
		}
	}
	return c.launchKernel(p.kernel, uint32(p.blocks), uint32(p.threads), s, x.args.bytes())
}

// zeroCopyRegistrations returns the registrations holding the call's buffers when zero-copy
// can run: recvReg is nil unless recv and (where the call reads it remotely) send are
// registered and the peers fit the zero-copy kernels. c.mu is held.
func (c *Comm) zeroCopyRegistrations(x *call) (sendReg, recvReg *Registration) {
	if len(c.regs) == 0 || c.nRanks-1 > maxZeroCopyPeers {
		return nil, nil
	}
	recvReg = c.registrationHolding(x.recv.ptr, x.recv.size)
	if x.send.size > 0 {
		if sendReg = c.registrationHolding(x.send.ptr, x.send.size); sendReg == nil {
			return nil, nil
		}
	}
	if recvReg == nil {
		return nil, nil
	}
	return sendReg, recvReg
}

// checkCall refuses what no collective accepts.
func checkCall(send, recv cuda.DevicePtr, count int, dt DataType) error {
	switch {
	case !dt.Valid():
		return fmt.Errorf("unsupported data type (int8, uint8, int32, uint32, int64, uint64, float16, bfloat16, "+
			"float32, float64, float8e4m3 and float8e5m2 are): %w", errs.ErrInvalidArgument)
	case count < 0:
		return fmt.Errorf("negative count: %w", errs.ErrInvalidArgument)
	case count > 0 && (send == 0 || recv == 0):
		return fmt.Errorf("NULL buffer: %w", errs.ErrInvalidArgument)
	case uint64(send)%uint64(dt.Size()) != 0 || uint64(recv)%uint64(dt.Size()) != 0:
		return fmt.Errorf("buffers at %#x and %#x are not aligned to the %d-byte element: %w",
			uint64(send), uint64(recv), dt.Size(), errs.ErrInvalidArgument)
	}
	return nil
}

// checkSameSized refuses what no collective accepts (checkCall) and send and receive buffers of
// count elements each that overlap without being the same; it returns their size in bytes.
func checkSameSized(send, recv cuda.DevicePtr, count int, dt DataType) (uint64, error) {
	if err := checkCall(send, recv, count, dt); err != nil {
		return 0, err
	}
	bytes := uint64(count) * uint64(dt.Size())
	if send != recv && overlap(send, recv, bytes, bytes) {
		return 0, fmt.Errorf("send and receive buffers overlap without being the same: %w", errs.ErrInvalidArgument)
	}
	return bytes, nil
}

// overlap reports whether [a, a+na) and [b, b+nb) share a byte.
func overlap(a, b cuda.DevicePtr, na, nb uint64) bool {
	return uint64(a) < uint64(b)+nb && uint64(b) < uint64(a)+na
}
