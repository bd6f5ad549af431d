// Command mscclpp-bench is the collective benchmark of MSCCL++ in Go, in the style of
// nccl-tests. The library's collectives (AllReduce, AllGather) are not implemented yet, so today
// it measures NCCL, loaded at run time in the same process, as the baseline; it says so in its
// output and --help. See README.md.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	mpi "github.com/sbromberger/gompi"

	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// The CUDA context is current per OS thread, and MPI prefers its initializing thread: keep main
// on one thread throughout.
func init() { runtime.LockOSThread() }

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mscclpp-bench:", err)
		os.Exit(2)
	}
	if err := ensureNVLSOff(); err != nil {
		fmt.Fprintln(os.Stderr, "mscclpp-bench:", err)
		os.Exit(2)
	}
	mpi.Start(false)
	world := mpi.NewCommunicator(nil)
	if err := run(opts, world); err != nil {
		fmt.Fprintf(os.Stderr, "mscclpp-bench: rank %d: %v\n", world.Rank(), err)
		world.Abort(1)
		os.Exit(1)
	}
	mpi.Stop()
}

// bench is one rank's state.
type bench struct {
	o            *options
	world        *mpi.Communicator
	rank, nranks int
	comm         ncclComm
	stream       cuda.Stream
	send, recv   cuda.DevicePtr
	input        []byte         // pinned host memory holding this rank's input pattern
	inputDev     cuda.DevicePtr // its device address
	output       []byte         // pinned host memory results are read back into
	outputDev    cuda.DevicePtr
}

func run(o *options, world *mpi.Communicator) (err error) {
	b := &bench{o: o, world: world, rank: world.Rank(), nranks: world.Size()}
	version, err := loadNCCL()
	if err != nil {
		return err
	}
	ndev, err := cuda.DeviceCount()
	if err != nil {
		return err
	}
	if ndev == 0 {
		return errors.New("no CUDA device")
	}
	dev, err := cuda.GetDevice(b.rank % ndev)
	if err != nil {
		return err
	}
	ctx, err := dev.RetainPrimaryContext()
	if err != nil {
		return err
	}
	defer ctx.Release()
	if err := ctx.Push(); err != nil {
		return err
	}
	defer cuda.PopContext()
	if b.stream, err = cuda.NewStream(); err != nil {
		return err
	}
	defer b.stream.Destroy()

	var id ncclUniqueID
	if b.rank == 0 {
		if id, err = ncclGetUniqueID(); err != nil {
			return err
		}
	}
	idBytes := id[:]
	world.BcastBytes(idBytes, 0)
	copy(id[:], idBytes)
	if b.comm, err = ncclCommInitRank(b.nranks, id, b.rank); err != nil {
		return err
	}
	defer b.comm.destroy()

	align := int64(o.dtype.size)
	if o.collective == "allgather" {
		align *= int64(b.nranks)
	}
	sizes := sweep(o.minBytes, o.maxBytes, o.factor, align)
	if len(sizes) == 0 {
		return fmt.Errorf("no size between -b %d and -e %d holds a whole element per rank", o.minBytes, o.maxBytes)
	}
	maxSize := int(sizes[len(sizes)-1])
	if err := b.alloc(maxSize); err != nil {
		return err
	}
	defer b.free()

	devLines, err := b.deviceLines(dev)
	if err != nil {
		return err
	}
	if b.rank == 0 {
		b.printHeader(version, devLines)
	}

	var rows []row
	var totalWrong int64
	for _, size := range sizes {
		var pair [2]row
		for k, inPlace := range []bool{false, true} {
			r, err := b.measure(size, inPlace)
			if err != nil {
				return fmt.Errorf("size %d (in-place %v): %w", size, inPlace, err)
			}
			pair[k] = r
			rows = append(rows, r)
			totalWrong += max(r.Wrong, 0)
		}
		if b.rank == 0 {
			fmt.Println(formatRow(pair[0], pair[1]))
		}
	}
	if b.rank != 0 {
		return nil
	}
	if o.check {
		fmt.Printf("# Errors with wrong results: %d %s\n", totalWrong, map[bool]string{true: "OK", false: "FAILED"}[totalWrong == 0])
	}
	fmt.Printf("# Avg bus bandwidth    : %g \n", avgBusBW(rows))
	if o.jsonFile != "" {
		if err := writeJSONFile(o.jsonFile, rows); err != nil {
			return err
		}
	}
	if o.plotFile != "" {
		if err := writePlot(o.plotFile, rows); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) alloc(size int) error {
	var err error
	if b.send, err = cuda.MemAlloc(size); err != nil {
		return err
	}
	if b.recv, err = cuda.MemAlloc(size); err != nil {
		return err
	}
	in, err := cuda.MemHostAlloc(size)
	if err != nil {
		return err
	}
	b.input = unsafe.Slice((*byte)(in), size)
	if b.inputDev, err = cuda.MemHostGetDevicePointer(in); err != nil {
		return err
	}
	out, err := cuda.MemHostAlloc(size)
	if err != nil {
		return err
	}
	b.output = unsafe.Slice((*byte)(out), size)
	if b.outputDev, err = cuda.MemHostGetDevicePointer(out); err != nil {
		return err
	}
	// The input pattern is the same prefix at every size: write it once.
	fillInput(b.o.dtype, b.input, b.rank, size/b.o.dtype.size)
	return nil
}

func (b *bench) free() {
	if b.input != nil {
		cuda.MemFreeHost(unsafe.Pointer(&b.input[0]))
	}
	if b.output != nil {
		cuda.MemFreeHost(unsafe.Pointer(&b.output[0]))
	}
	if b.send != 0 {
		cuda.MemFree(b.send)
	}
	if b.recv != 0 {
		cuda.MemFree(b.recv)
	}
}

// deviceLines collects every rank's "# Rank ..." line (each rank broadcasts its own in turn).
func (b *bench) deviceLines(dev cuda.Device) ([]string, error) {
	name, err := dev.Name()
	if err != nil {
		return nil, err
	}
	bus, err := dev.PCIBusID()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	mine := fmt.Sprintf("#  Rank %2d Pid %6d on %10s device %2d [%s] %s", b.rank, os.Getpid(), host, int(dev), bus, name)
	const lineLen = 256
	lines := make([]string, b.nranks)
	for r := range b.nranks {
		buf := make([]byte, lineLen)
		if r == b.rank {
			copy(buf, mine)
		}
		b.world.BcastBytes(buf, r)
		n := 0
		for n < len(buf) && buf[n] != 0 {
			n++
		}
		lines[r] = string(buf[:n])
	}
	return lines, nil
}

func (b *bench) printHeader(version int, devLines []string) {
	o := b.o
	fmt.Println("# mscclpp-bench: collective benchmark of MSCCL++ in Go (nccl-tests style)")
	fmt.Println("# " + notImplementedLine)
	fmt.Printf("# NCCL version %s (%s), NCCL_NVLS_ENABLE=%s\n", versionString(version), nccl.path, os.Getenv("NCCL_NVLS_ENABLE"))
	fmt.Printf("# collective %s  nranks %d  minBytes %d  maxBytes %d  step: %d(factor)  warmup iters: %d  iters: %d  validation: %d  graph: 0\n",
		o.collective, b.nranks, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, map[bool]int{true: 1}[o.check])
	fmt.Println("# time: wall clock around the timed iterations' enqueues + stream synchronize, per iteration, max over ranks")
	fmt.Println("#")
	fmt.Println("# Using devices")
	for _, l := range devLines {
		fmt.Println(l)
	}
	fmt.Println("#")
	fmt.Println(tableHeader)
}

// launch enqueues one collective of size bytes (total received, for AllGather).
func (b *bench) launch(size int64, inPlace bool) error {
	d := b.o.dtype
	if b.o.collective == "allgather" {
		perRank := int(size) / b.nranks / d.size
		send := b.send
		if inPlace {
			send = b.recv + cuda.DevicePtr(b.rank*perRank*d.size)
		}
		return b.comm.allGather(send, b.recv, perRank, d.nccl, b.stream)
	}
	send := b.send
	if inPlace {
		send = b.recv
	}
	return b.comm.allReduce(send, b.recv, int(size)/d.size, d.nccl, b.o.op.nccl, b.stream)
}

// measure checks (with -c 1) and times one size and placement.
func (b *bench) measure(size int64, inPlace bool) (row, error) {
	o, d := b.o, b.o.dtype
	count := int(size) / d.size
	r := row{Impl: "nccl", Collective: o.collective, Datatype: d.name, Op: o.op.name, Ranks: b.nranks,
		Size: size, Count: int64(count), InPlace: inPlace, Wrong: -1}
	if o.collective == "allgather" {
		r.Op = "none"
	}
	if o.check {
		wrong, err := b.check(size, inPlace)
		if err != nil {
			return r, err
		}
		r.Wrong = wrong
	}
	for range o.warmup {
		if err := b.launch(size, inPlace); err != nil {
			return r, err
		}
	}
	if err := b.stream.Synchronize(); err != nil {
		return r, err
	}
	b.world.Barrier()
	start := time.Now()
	for range o.iters {
		if err := b.launch(size, inPlace); err != nil {
			return r, err
		}
	}
	if err := b.stream.Synchronize(); err != nil {
		return r, err
	}
	us := float64(time.Since(start).Nanoseconds()) / 1e3 / float64(o.iters)
	maxUs := []float64{0}
	if err := b.world.AllreduceFloat64s(maxUs, []float64{us}, mpi.OpMax, 0); err != nil {
		return r, err
	}
	r.TimeUs = maxUs[0]
	r.AlgBW, r.BusBW = bandwidths(o.collective, b.nranks, size, r.TimeUs)
	return r, nil
}

// check loads the inputs, runs the collective once, reads the result back and counts the
// elements that differ from the host's expectation, summed over ranks.
func (b *bench) check(size int64, inPlace bool) (int64, error) {
	d := b.o.dtype
	count := int(size) / d.size
	sendBytes, sendAt := int(size), b.send
	if b.o.collective == "allgather" {
		sendBytes = int(size) / b.nranks
		if inPlace {
			sendAt = b.recv + cuda.DevicePtr(b.rank*sendBytes)
		}
	} else if inPlace {
		sendAt = b.recv
	}
	// Poison the output first, so a collective that writes nothing cannot pass.
	if err := cuda.MemsetD8Async(b.recv, 0xff, int(size), b.stream); err != nil {
		return 0, err
	}
	if err := cuda.MemcpyAsync(sendAt, b.inputDev, sendBytes, b.stream); err != nil {
		return 0, err
	}
	if err := b.launch(size, inPlace); err != nil {
		return 0, err
	}
	if err := cuda.MemcpyAsync(b.outputDev, b.recv, int(size), b.stream); err != nil {
		return 0, err
	}
	if err := b.stream.Synchronize(); err != nil {
		return 0, err
	}
	var want func(i int) float64
	if b.o.collective == "allgather" {
		perRank := count / b.nranks
		want = func(i int) float64 { return expectedAllGather(perRank, i) }
	} else {
		op, n := b.o.op, b.nranks
		want = func(i int) float64 { return expectedAllReduce(op, n, i) }
	}
	wrong := float64(countWrong(d, b.output, count, want))
	total := []float64{0}
	if err := b.world.AllreduceFloat64s(total, []float64{wrong}, mpi.OpSum, 0); err != nil {
		return 0, err
	}
	return int64(total[0]), nil
}
