// Package proxy is the host side of the legacy trigger FIFO (include/mscclppfifo.h): one proxy
// per GPU consumes the ring of 16-byte triggers that the GPU's mscclppDevConn functions push, and
// executes them with an Engine (the CUDA copy engine in the library, host memory in tests).
//
// # The loop
//
// The ring is shared by every connection of the rank; a trigger's connId indexes the proxy's
// connection table. The loop reads the slot at tail % len(slots). value[0] == 0 means the slot is
// empty. Otherwise it decodes the trigger and, in this order:
//
//   - Data: Engine.Copy of dataSize bytes from LocalBuf+srcDataOffset to RemoteBuf+dstDataOffset;
//   - Flag: Engine.Copy of the 8-byte epoch at LocalSignal (localSignalEpochId->device) to
//     RemoteSignal (the peer's remoteSignalEpochId->proxy), on the same ordered queue, after the
//     data, so the peer's wait() returns only once the data has landed;
//   - Sync: Engine.Drain, so the slot is released only after every earlier copy has completed.
//
// Then it releases the slot (value[1] = 0, then value[0] = 0: flush() on the GPU watches value[0]),
// advances the host tail and, every fifo.FlushCounter triggers, gives the tail to
// Engine.PublishTail, which makes the device-side triggerFifoTail that push() waits on read it.
// The tail persists across Stop and Start, as the GPU's head keeps counting.
//
// Refused triggers. Before anything is executed, the connId must index the table and, for Data,
// [srcDataOffset, +dataSize) must lie within LocalSize and [dstDataOffset, +dataSize) within
// RemoteSize, checked without uint64 overflow. A trigger that fails a check, or that belongs to a
// connection failed earlier, is logged (WARN for the refusal that fails the connection, DEBUG for
// later ones), released without executing anything, so that the GPU does not hang, and its
// connection is marked failed (Failed, ConnErr). The proxy never asks the engine to touch memory
// outside a connection's registered buffers and signal words.
//
// Engine errors. The first error an Engine call returns is recorded (Err, which wraps it with the
// operation, connection and trigger), logged at ERROR, and marks the proxy failed: from then on no
// Copy or Drain is issued, but triggers are still released and the tail still published, so GPU
// producers never deadlock on a full ring. The library reports the recorded error to later API
// calls.
//
// # Memory ordering
//
// The GPU writes a trigger with one 128-bit store (st.volatile.global.v2.u64) into host-pinned
// memory. On amd64 the proxy reads it with one aligned 16-byte SSE load (load_amd64.s); CPUs that
// enumerate AVX guarantee such loads are atomic (Intel SDM vol. 3A, "Guaranteed Atomic
// Operations"; AMD APM vol. 2, "Access Atomicity"), so a trigger is seen whole or not at all. x86
// is TSO: the loop's later loads are not reordered before the trigger load, and the two releasing
// stores become visible in program order, value[0] last. That the data a kernel wrote is visible
// to the copy engine by the time its trigger is, is the kernel's business (a fence before put), as
// in MSCCL++. Elsewhere the fallback (load_other.go) loads value[0] then
// value[1] atomically, which is exact when the producer stores value[1] first (as the Go test
// device does) or the 128-bit store lands as one unit. Under the race detector, which cannot see
// the assembly load, an extra atomic load of value[0] records the synchronisation (race.go).
//
// The signal's ordering after its data relies on the Engine executing copies in enqueue order (one
// CUDA stream). The published tail may lag the host tail by up to FlushCounter-1 triggers; push()
// additionally waits for its slot's value[0] to be 0, and a flush() waits for its own slot to be
// released, so the lag costs nothing but ring capacity.
//
// # Threads
//
// Start runs the loop on one goroutine locked to its OS thread (never unlocked, so the thread ends
// with the goroutine) and calls Config.InitThread there before any Engine call: the library makes
// its CUDA context current and sets the CPU affinity. All Engine calls come from that thread.
// The loop busy-polls with a PAUSE hint between empty polls and looks at the stop flag every
// pollBatch polls. After Config.IdleSpin (default 10 ms) without a trigger it naps
// Config.IdleSleep (default 50 µs) between batches; triggers that keep flowing never meet a nap,
// and the first trigger after a longer idle period waits at most about one nap.
//
// Stop sets the stop flag and joins the goroutine, which drains the engine before it exits; it
// therefore waits for any Engine call in progress. Engine.Drain must be bounded (the host test
// engine returns as soon as its queue is empty; a CUDA engine should poll the stream against a
// deadline and return an error instead of blocking forever on a hung device), so Stop cannot hang
// on a Sync that never completes. Triggers still in the ring when the loop stops are consumed by
// the next Start.
//
// The loop does not allocate per trigger (TestNoAllocationPerTrigger, BenchmarkProxyTrigger);
// only refusals and engine failures, which log, allocate.
package proxy
