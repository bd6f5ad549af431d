// Command mscclpp-bench is the collective benchmark of MSCCL++ in Go, in the style of
// nccl-tests. It measures the library's AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll
// and SendRecv (package collectives) and, with --compare-nccl, NCCL (loaded at run time) in the
// same process on the same buffers and stream, side by side. See README.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	mpi "github.com/sbromberger/gompi"

	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// The CUDA context is current per OS thread, MPI prefers its initializing thread, and a CUDA
// graph capture must end on the thread that began it: keep main on one thread throughout.
func init() { runtime.LockOSThread() }

// errWrongResults: the run completed but some results were wrong (the summary says how many).
var errWrongResults = errors.New("wrong results")

// setupTimeout bounds building the library's communicator (bootstrap join and connections).
const setupTimeout = 5 * time.Minute

func main() {
	opts, err := parseOptions(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mscclpp-bench:", err)
		os.Exit(2)
	}
	ncclLibOption = opts.ncclLib
	if err := ensureNVLSOff(); err != nil {
		fmt.Fprintln(os.Stderr, "mscclpp-bench:", err)
		os.Exit(2)
	}
	mpi.Start(false)
	world := mpi.NewCommunicator(nil)
	err = run(opts, world)
	switch {
	case errors.Is(err, errWrongResults):
		// Every rank knows (the counts are summed over ranks); rank 0 printed them.
		mpi.Stop()
		os.Exit(1)
	case err != nil:
		// A failed rank does not tear down: the others may be waiting for it in a collective,
		// and after a failed kernel the GPU context is unusable. MPI_Abort ends every rank.
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
	device       int // CUDA device ordinal
	impls        []impl
	ncclVersion  int // when NCCL is measured
	stream       cuda.Stream
	send, recv   cuda.DevicePtr
	bufBytes     int            // the size of send and recv
	input        []byte         // pinned host memory holding this rank's input pattern
	inputDev     cuda.DevicePtr // its device address
	output       []byte         // pinned host memory results are read back into
	outputDev    cuda.DevicePtr
	// undo holds what setup acquired, released in reverse order by teardown. A rank that fails
	// skips it (see main).
	undo []func() error
}

// onTeardown registers f to run at teardown, before everything registered earlier.
func (b *bench) onTeardown(f func() error) { b.undo = append(b.undo, f) }

func (b *bench) teardown() error {
	var errList []error
	for i := len(b.undo) - 1; i >= 0; i-- {
		errList = append(errList, b.undo[i]())
	}
	b.undo = nil
	return errors.Join(errList...)
}

func run(o *options, world *mpi.Communicator) error {
	b := &bench{o: o, world: world, rank: world.Rank(), nranks: world.Size()}
	align := int64(o.dtype.size)
	if perRank(o.collective) {
		align *= int64(b.nranks)
	}
	sizes := sweep(o.minBytes, o.maxBytes, o.factor, align)
	if len(sizes) == 0 {
		return fmt.Errorf("no size between -b %d and -e %d holds a whole element per rank", o.minBytes, o.maxBytes)
	}
	dev, err := b.setup(int(sizes[len(sizes)-1]))
	if err != nil {
		return err
	}
	devLines, err := b.deviceLines(dev)
	if err != nil {
		return err
	}
	if b.rank == 0 {
		for _, l := range b.headerLines(devLines) {
			fmt.Println(l)
		}
	}

	var rows []row
	var totalWrong int64
	for _, size := range sizes {
		pairs := make([][2]row, len(b.impls)) // per implementation: out-of-place, in-place
		for k, inPlace := range []bool{false, true} {
			for i, im := range b.impls {
				r, err := b.measure(im, size, inPlace)
				if err != nil {
					return fmt.Errorf("%s %s of %d bytes (%s %s, %s): %w", im.name(), o.collective, size,
						o.dtype.name, opName(o), placement(inPlace), err)
				}
				pairs[i][k] = r
				rows = append(rows, r)
				totalWrong += max(r.Wrong, 0)
			}
		}
		if b.rank == 0 {
			if len(pairs) == 2 {
				fmt.Println(formatCompareRow(pairs[0], pairs[1]))
			} else {
				fmt.Println(formatRow(pairs[0][0], pairs[0][1]))
			}
		}
	}
	// Every rank is done with the GPUs before any of them tears down.
	world.Barrier()
	if err := b.teardown(); err != nil {
		return fmt.Errorf("teardown: %w", err)
	}
	if b.rank == 0 {
		for _, l := range summaryLines(o, rows) {
			fmt.Println(l)
		}
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
	}
	if totalWrong > 0 {
		return errWrongResults
	}
	return nil
}

func placement(inPlace bool) string {
	if inPlace {
		return "in-place"
	}
	return "out-of-place"
}

// opName is the reduction as rows name it: "none" for AllGather and Broadcast.
func opName(o *options) string {
	if !reduces(o.collective) {
		return "none"
	}
	return o.op.name
}

// setup loads NCCL when it is measured, makes this rank's GPU current, allocates the buffers
// for maxSize bytes and builds the communicator of each implementation.
func (b *bench) setup(maxSize int) (cuda.Device, error) {
	if b.o.uses(implNCCL) {
		// First, so that a missing NCCL fails before any GPU work.
		version, err := loadNCCL()
		if err != nil {
			return 0, err
		}
		b.ncclVersion = version
		if err := ncclSupport(b.o.collective, nccl.path, version, ncclHas); err != nil {
			return 0, err
		}
	}
	ndev, err := cuda.DeviceCount()
	if err != nil {
		return 0, err
	}
	if ndev == 0 {
		return 0, errors.New("no CUDA device")
	}
	b.device = b.rank % ndev
	dev, err := cuda.GetDevice(b.device)
	if err != nil {
		return 0, err
	}
	ctx, err := dev.RetainPrimaryContext()
	if err != nil {
		return 0, err
	}
	b.onTeardown(ctx.Release)
	if err := ctx.Push(); err != nil {
		return 0, err
	}
	b.onTeardown(cuda.PopContext)
	if b.stream, err = cuda.NewStream(); err != nil {
		return 0, err
	}
	b.onTeardown(b.stream.Destroy)
	if err := b.alloc(maxSize); err != nil {
		return 0, err
	}
	for _, name := range b.o.impls {
		var im impl
		var err error
		switch name {
		case implMscclpp:
			im, err = b.newMscclpp()
		case implNCCL:
			im, err = b.newNCCL()
		default:
			err = fmt.Errorf("unknown implementation %q", name)
		}
		if err != nil {
			return 0, fmt.Errorf("set up %s: %w", name, err)
		}
		b.impls = append(b.impls, im)
	}
	return dev, nil
}

// newMscclpp builds the library's communicator: a TCP bootstrap whose unique id rank 0 creates
// and broadcasts over MPI, a core.Communicator over it and a collectives.Comm on this rank's GPU.
func (b *bench) newMscclpp() (impl, error) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	var opts bootstrap.Options // timeout and interface from MSCCLPP_BOOTSTRAP_TIMEOUT, MSCCLPP_SOCKET_IFNAME
	var id bootstrap.UniqueID
	if b.rank == 0 {
		root, err := bootstrap.NewRoot(opts)
		if err != nil {
			return nil, fmt.Errorf("bootstrap root: %w", err)
		}
		b.onTeardown(root.Close)
		id = root.ID()
	}
	idBytes := make([]byte, len(id))
	copy(idBytes, id[:])
	b.world.BcastBytes(idBytes, 0)
	copy(id[:], idBytes)
	t, err := bootstrap.Join(ctx, id, b.rank, b.nranks, opts)
	if err != nil {
		return nil, fmt.Errorf("bootstrap join: %w", err)
	}
	b.onTeardown(t.Close)
	cctx := core.NewContext()
	b.onTeardown(cctx.Close)
	c, err := collectives.New(ctx, core.NewCommunicator(t, cctx), b.device)
	if err != nil {
		return nil, err
	}
	b.onTeardown(c.Close)
	if b.o.register {
		for _, p := range []cuda.DevicePtr{b.send, b.recv} {
			r, err := c.Register(ctx, p, uint64(b.bufBytes))
			if err != nil {
				return nil, err
			}
			b.onTeardown(r.Close)
		}
	}
	return mscclppImpl{c: c}, nil
}

// newNCCL builds an NCCL communicator: rank 0 gets the unique id and broadcasts it over MPI.
func (b *bench) newNCCL() (impl, error) {
	var id ncclUniqueID
	if b.rank == 0 {
		var err error
		if id, err = ncclGetUniqueID(); err != nil {
			return nil, err
		}
	}
	idBytes := make([]byte, len(id))
	copy(idBytes, id[:])
	b.world.BcastBytes(idBytes, 0)
	copy(id[:], idBytes)
	c, err := ncclCommInitRank(b.nranks, id, b.rank)
	if err != nil {
		return nil, err
	}
	b.onTeardown(c.destroy)
	return ncclImpl{c: c}, nil
}

func (b *bench) alloc(size int) error {
	var err error
	b.bufBytes = size
	if b.send, err = cuda.MemAlloc(size); err != nil {
		return err
	}
	b.onTeardown(func() error { return cuda.MemFree(b.send) })
	if b.recv, err = cuda.MemAlloc(size); err != nil {
		return err
	}
	b.onTeardown(func() error { return cuda.MemFree(b.recv) })
	in, err := cuda.MemHostAlloc(size)
	if err != nil {
		return err
	}
	b.onTeardown(func() error { return cuda.MemFreeHost(in) })
	b.input = unsafe.Slice((*byte)(in), size)
	if b.inputDev, err = cuda.MemHostGetDevicePointer(in); err != nil {
		return err
	}
	out, err := cuda.MemHostAlloc(size)
	if err != nil {
		return err
	}
	b.onTeardown(func() error { return cuda.MemFreeHost(out) })
	b.output = unsafe.Slice((*byte)(out), size)
	if b.outputDev, err = cuda.MemHostGetDevicePointer(out); err != nil {
		return err
	}
	// The input pattern is the same prefix at every size: write it once.
	fillInput(b.o.dtype, b.input, b.rank, size/b.o.dtype.size)
	return nil
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

// measure checks (with -c 1) and times one implementation, size and placement; one whose result
// is undefined is timed unchecked (uncheckedWhy).
func (b *bench) measure(im impl, size int64, inPlace bool) (row, error) {
	o, d := b.o, b.o.dtype
	r := row{Impl: im.name(), Collective: o.collective, Datatype: d.name, Op: opName(o), Ranks: b.nranks,
		Size: size, Count: size / int64(d.size), InPlace: inPlace, Wrong: -1, Graph: o.graph,
		Registered: o.register && im.name() == implMscclpp}
	if o.graph > 0 {
		// One direct call before the first capture, so that nothing is set up lazily (kernels
		// loaded, NCCL connections made) while capturing.
		if err := b.call(im, size, inPlace); err != nil {
			return r, fmt.Errorf("call before the graph capture: %w", err)
		}
		if err := b.stream.Synchronize(); err != nil {
			return r, fmt.Errorf("stream synchronize before the graph capture: %w", err)
		}
	}
	if o.check && uncheckedWhy(o.collective, im.name(), inPlace, b.nranks) == "" {
		wrong, err := b.check(im, size, inPlace)
		if err != nil {
			return r, fmt.Errorf("check: %w", err)
		}
		r.Wrong = wrong
	}
	for i := range o.warmup {
		if err := b.call(im, size, inPlace); err != nil {
			return r, fmt.Errorf("warm-up call %d: %w", i, err)
		}
	}
	var elapsed time.Duration
	var err error
	calls := o.iters
	if o.graph == 0 {
		elapsed, err = b.timeCalls(im, size, inPlace)
	} else {
		elapsed, err = b.timeGraph(im, size, inPlace)
		calls *= o.graph
	}
	if err != nil {
		return r, err
	}
	us := float64(elapsed.Nanoseconds()) / 1e3 / float64(calls)
	maxUs := []float64{0}
	if err := b.world.AllreduceFloat64s(maxUs, []float64{us}, mpi.OpMax, 0); err != nil {
		return r, fmt.Errorf("MPI allreduce of the times: %w", err)
	}
	r.TimeUs = maxUs[0]
	r.AlgBW, r.BusBW = bandwidths(o.collective, b.nranks, size, r.TimeUs)
	return r, nil
}

// timeCalls times -n back-to-back calls and a stream synchronize, after the warm-up has
// completed on every rank.
func (b *bench) timeCalls(im impl, size int64, inPlace bool) (time.Duration, error) {
	if err := b.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("stream synchronize after the warm-up: %w", err)
	}
	b.world.Barrier()
	start := time.Now()
	for i := range b.o.iters {
		if err := b.call(im, size, inPlace); err != nil {
			return 0, fmt.Errorf("timed call %d: %w", i, err)
		}
	}
	if err := b.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("stream synchronize after the timed calls: %w", err)
	}
	return time.Since(start), nil
}

// timeGraph captures -n calls into a CUDA graph and times -G launches of it and a stream
// synchronize. With warm-up (-w > 0) the graph is launched once untimed first (its first launch
// uploads it to the GPU).
func (b *bench) timeGraph(im impl, size int64, inPlace bool) (time.Duration, error) {
	if err := b.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("stream synchronize before the graph capture: %w", err)
	}
	exec, err := b.capture(b.o.iters, func() error { return b.call(im, size, inPlace) })
	if err != nil {
		return 0, err
	}
	if b.o.warmup > 0 {
		if err := exec.Launch(b.stream); err != nil {
			return 0, fmt.Errorf("warm-up graph launch: %w", err)
		}
		if err := b.stream.Synchronize(); err != nil {
			return 0, fmt.Errorf("stream synchronize after the warm-up graph launch: %w", err)
		}
	}
	b.world.Barrier()
	start := time.Now()
	for i := range b.o.graph {
		if err := exec.Launch(b.stream); err != nil {
			return 0, fmt.Errorf("timed graph launch %d: %w", i, err)
		}
	}
	if err := b.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("stream synchronize after the timed graph launches: %w", err)
	}
	elapsed := time.Since(start)
	if err := exec.Destroy(); err != nil {
		return 0, fmt.Errorf("destroy the graph: %w", err)
	}
	return elapsed, nil
}

// capture records n calls of call on the stream into a CUDA graph and returns it instantiated.
// The stream is out of capture mode when it returns, failed or not.
func (b *bench) capture(n int, call func() error) (cuda.GraphExec, error) {
	if err := b.stream.BeginCapture(); err != nil {
		return cuda.GraphExec{}, fmt.Errorf("begin graph capture: %w", err)
	}
	var callErr error
	for i := 0; i < n && callErr == nil; i++ {
		if err := call(); err != nil {
			callErr = fmt.Errorf("call %d of %d during graph capture: %w", i, n, err)
		}
	}
	g, err := b.stream.EndCapture()
	if callErr != nil {
		if err == nil {
			g.Destroy()
		}
		return cuda.GraphExec{}, callErr // EndCapture's error is a consequence of it
	}
	if err != nil {
		return cuda.GraphExec{}, fmt.Errorf("end graph capture: %w", err)
	}
	exec, err := g.Instantiate()
	if err != nil {
		g.Destroy()
		return cuda.GraphExec{}, fmt.Errorf("instantiate the graph: %w", err)
	}
	if err := g.Destroy(); err != nil {
		exec.Destroy()
		return cuda.GraphExec{}, fmt.Errorf("destroy the captured graph: %w", err)
	}
	return exec, nil
}

// check loads the inputs, runs the collective once, reads the result back and counts the
// elements that differ from the host's expectation, summed over ranks. In graph mode the checked
// call is the launch of a graph that captured it.
func (b *bench) check(im impl, size int64, inPlace bool) (int64, error) {
	d, x := b.o.dtype, b.buffers(size, inPlace)
	var exec cuda.GraphExec
	graph := b.o.graph > 0
	if graph {
		var err error
		if exec, err = b.capture(1, func() error { return b.call(im, size, inPlace) }); err != nil {
			return 0, err
		}
	}
	// Poison the output first, so a collective that writes nothing cannot pass.
	if err := cuda.MemsetD8Async(b.recv, 0xff, int(size), b.stream); err != nil {
		return 0, fmt.Errorf("poison the receive buffer: %w", err)
	}
	if err := cuda.MemcpyAsync(x.send, b.inputDev, x.inBytes, b.stream); err != nil {
		return 0, fmt.Errorf("copy the input: %w", err)
	}
	if graph {
		if err := exec.Launch(b.stream); err != nil {
			return 0, fmt.Errorf("graph launch: %w", err)
		}
	} else if err := b.call(im, size, inPlace); err != nil {
		return 0, err
	}
	if err := cuda.MemcpyAsync(b.outputDev, x.out, x.outCount*d.size, b.stream); err != nil {
		return 0, fmt.Errorf("copy the result back: %w", err)
	}
	if err := b.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("stream synchronize after the checked call: %w", err)
	}
	if graph {
		if err := exec.Destroy(); err != nil {
			return 0, fmt.Errorf("destroy the graph: %w", err)
		}
	}
	wrong := float64(countWrong(d, b.output, x.outCount, b.expected(size)))
	total := []float64{0}
	if err := b.world.AllreduceFloat64s(total, []float64{wrong}, mpi.OpSum, 0); err != nil {
		return 0, fmt.Errorf("MPI allreduce of the wrong counts: %w", err)
	}
	return int64(total[0]), nil
}
