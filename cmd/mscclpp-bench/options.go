package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// The implementations the benchmark measures.
const (
	implMscclpp = "mscclpp" // this library's collectives (package collectives)
	implNCCL    = "nccl"    // NCCL, dlopened in the same process
)

// options are the command line, in nccl-tests' spelling.
type options struct {
	minBytes, maxBytes int64
	factor             int
	warmup, iters      int
	check              bool
	dtype              dataType
	op                 redOp
	collective         string // one of collectiveNames
	jsonFile           string
	plotFile           string
	// impls are the implementations measured, in the order each size runs them: mscclpp alone
	// (the default), nccl alone (-impl nccl, --nccl-only) or both (--compare-nccl).
	impls []string
	// graph is -G: 0 times direct calls; N > 0 captures the -n timed calls into one CUDA graph
	// and times N launches of it.
	graph int
	// register is -R: the library's collectives get the send and receive buffers registered
	// (zero-copy for large messages); NCCL's calls use them unregistered.
	register bool
	// ncclLib is --nccl-lib: the NCCL-compatible library the nccl column drives ("" for
	// MSCCLPP_NCCL_LIBRARY's).
	ncclLib string
}

// compare reports whether both implementations run (--compare-nccl).
func (o *options) compare() bool { return len(o.impls) == 2 }

// uses reports whether impl is measured.
func (o *options) uses(impl string) bool {
	for _, i := range o.impls {
		if i == impl {
			return true
		}
	}
	return false
}

// parseSize reads a byte count with an optional K, M or G suffix (powers of 1024), as
// nccl-tests does: "8", "64K", "128M", "1G".
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	if t != "" {
		switch t[len(t)-1] {
		case 'k', 'K':
			mult = 1 << 10
		case 'm', 'M':
			mult = 1 << 20
		case 'g', 'G':
			mult = 1 << 30
		}
		if mult != 1 {
			t = t[:len(t)-1]
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("size %q: want a non-negative integer with an optional K, M or G suffix", s)
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// sizeFlag is a flag.Value for sizes with suffixes.
type sizeFlag struct{ v *int64 }

func (f sizeFlag) String() string {
	if f.v == nil {
		return ""
	}
	return strconv.FormatInt(*f.v, 10)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.v = n
	return nil
}

// sweep lists the message sizes from minBytes to maxBytes, multiplying by factor, each rounded
// down to a multiple of align (the element size, times the rank count for AllGather, ReduceScatter
// and AlltoAll, as nccl-tests does). Sizes that round to 0 and repeats are dropped.
func sweep(minBytes, maxBytes int64, factor int, align int64) []int64 {
	if factor < 2 || align <= 0 {
		return nil
	}
	var out []int64
	for s := max(minBytes, 1); s <= maxBytes; s *= int64(factor) {
		a := s / align * align
		if a > 0 && (len(out) == 0 || out[len(out)-1] != a) {
			out = append(out, a)
		}
		if s > maxBytes/int64(factor) {
			break
		}
	}
	return out
}

const usageText = `mscclpp-bench: collective benchmark of MSCCL++ in Go, in the style of nccl-tests.

It measures the library's own AllReduce, AllGather, ReduceScatter, Broadcast, AlltoAll or
SendRecv (package collectives) by default;
--compare-nccl also runs every size through NCCL (libnccl.so.2, loaded at run time) in the same
process, on the same buffers and stream, and prints both times and their ratio (mscclpp / nccl);
-impl nccl (or --nccl-only) measures NCCL alone. NCCL is loaded only when one of these asks for it.

Run it under mpirun, one rank per GPU (GPU = rank % device count), for instance:

  mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE=0 -x LD_LIBRARY_PATH \
      mscclpp-bench -b 8 -e 1G -f 2 -op allreduce --compare-nccl -G 1

NCCL_NVLS_ENABLE must be unset (the tool sets it to 0) or 0; any other value is refused.
--nccl-lib PATH (or MSCCLPP_NCCL_LIBRARY) names another NCCL-compatible library than libnccl.so.2.
This project's own NCCL layer (libmscclpp_nccl.so) cannot be loaded here: it carries the library's
Go runtime, and a Go program cannot load a second one. bench/nccl_overhead (a C program) compares
it with the C API and the real NCCL instead.
MSCCLPP_ALLREDUCE_ALGO / MSCCLPP_ALLGATHER_ALGO / MSCCLPP_BROADCAST_ALGO force the library's algorithm (the header says so).
-R 1 registers the send and receive buffers with the library (collectives.Comm.Register), so
that its large calls run zero-copy (AlltoAll and SendRecv always go through their own scratch);
NCCL uses the same buffers unregistered.

Time per size (-G 0) is wall-clock (time.Now) around -n back-to-back enqueued calls followed by
a stream synchronize, divided by -n, and the maximum over ranks; -w warm-up calls precede it.
With -G N the -n calls are captured once into a CUDA graph and the time is wall-clock around N
launches of that graph and a stream synchronize, divided by n*N.
algbw = size/time; busbw = algbw*2(n-1)/n for AllReduce, algbw*(n-1)/n for AllGather (whose
size is the total bytes each rank receives), ReduceScatter (whose size is the total bytes each
rank sends) and AlltoAll (whose size is either buffer: each rank sends size/n bytes to every rank),
algbw for Broadcast (from rank 0) and SendRecv (each rank sends size bytes to rank+1 and receives
size bytes from rank-1, one ncclSend and one ncclRecv in a group on NCCL's side).
In place, the library's AlltoAll is checked, and its SendRecv on 2 ranks (an exchange with one
peer); NCCL's AlltoAll and SendRecv, and the library's SendRecv on more ranks, are timed but not
checked, as in nccl-tests.

Options:
`

// parseOptions parses args (without the program name). It returns flag.ErrHelp after printing
// the usage for -h/--help.
func parseOptions(args []string, out io.Writer) (*options, error) {
	o := &options{minBytes: 8, maxBytes: 128 << 20}
	fs := flag.NewFlagSet("mscclpp-bench", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageText)
		fs.PrintDefaults()
	}
	fs.Var(sizeFlag{&o.minBytes}, "b", "minimum size in bytes (K, M, G suffixes)")
	fs.Var(sizeFlag{&o.maxBytes}, "e", "maximum size in bytes (K, M, G suffixes)")
	fs.IntVar(&o.factor, "f", 2, "multiplication factor between sizes (integer >= 2)")
	fs.IntVar(&o.warmup, "w", 5, "warm-up iterations per size")
	fs.IntVar(&o.iters, "n", 20, "timed iterations per size (with -G: calls captured in the graph)")
	check := fs.Int("c", 1, "check results (0 or 1)")
	dt := fs.String("d", "float", "datatype: float, half, bfloat16, int32, uint32, double")
	op := fs.String("o", "sum", "reduction op: sum, min, max (AllReduce, ReduceScatter)")
	fs.StringVar(&o.collective, "op", opAllReduce, "collective: "+orList(collectiveNames))
	fs.StringVar(&o.jsonFile, "json", "", "write every row as JSON to `FILE`")
	fs.StringVar(&o.plotFile, "plot", "", "write bus bandwidth and latency plots to `FILE.png`")
	impl := fs.String("impl", implMscclpp, "implementation measured: mscclpp or nccl")
	compare := fs.Bool("compare-nccl", false, "measure NCCL too, on the same buffers and stream, and print both and their ratio")
	ncclOnly := fs.Bool("nccl-only", false, "measure NCCL alone (same as -impl nccl)")
	fs.IntVar(&o.graph, "G", 0, "CUDA graph mode: capture the -n calls into a graph and time `N` launches of it (0: direct calls)")
	fs.StringVar(&o.ncclLib, "nccl-lib", "", "the NCCL-compatible library the nccl column drives (`PATH`; default MSCCLPP_NCCL_LIBRARY, else libnccl.so.2)")
	register := fs.Int("R", 0, "register the buffers with the library for zero-copy collectives (0 or 1; NCCL's calls stay unregistered)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var err error
	if o.dtype, err = parseDataType(*dt); err != nil {
		return nil, err
	}
	if o.op, err = parseRedOp(*op); err != nil {
		return nil, err
	}
	if !slices.Contains(collectiveNames, o.collective) {
		return nil, fmt.Errorf("-op %q: want %s", o.collective, orList(collectiveNames))
	}
	switch {
	case o.factor < 2:
		return nil, fmt.Errorf("-f %d: the factor must be an integer >= 2", o.factor)
	case o.minBytes > o.maxBytes:
		return nil, fmt.Errorf("-b %d is larger than -e %d", o.minBytes, o.maxBytes)
	case o.maxBytes <= 0:
		return nil, fmt.Errorf("-e %d: the maximum size must be positive", o.maxBytes)
	case o.warmup < 0 || o.iters < 1:
		return nil, fmt.Errorf("-w %d -n %d: want -w >= 0 and -n >= 1", o.warmup, o.iters)
	case *check != 0 && *check != 1:
		return nil, fmt.Errorf("-c %d: want 0 or 1", *check)
	case *register != 0 && *register != 1:
		return nil, fmt.Errorf("-R %d: want 0 or 1", *register)
	case o.graph < 0:
		return nil, fmt.Errorf("-G %d: want 0 (no graph) or the number of graph launches", o.graph)
	}
	o.check = *check == 1
	o.register = *register == 1
	implSet := false
	fs.Visit(func(f *flag.Flag) { implSet = implSet || f.Name == "impl" })
	if o.impls, err = chooseImpls(*impl, implSet, *compare, *ncclOnly); err != nil {
		return nil, err
	}
	return o, nil
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// chooseImpls turns -impl, --compare-nccl and --nccl-only into the implementations to measure.
// implSet says whether -impl was given.
func chooseImpls(impl string, implSet, compare, ncclOnly bool) ([]string, error) {
	switch {
	case impl != implMscclpp && impl != implNCCL:
		return nil, fmt.Errorf("-impl %q: want mscclpp or nccl", impl)
	case ncclOnly && implSet && impl != implNCCL:
		return nil, fmt.Errorf("--nccl-only contradicts -impl %s", impl)
	case compare && (ncclOnly || impl == implNCCL):
		return nil, errors.New("--compare-nccl measures mscclpp and nccl side by side; it does not go with -impl nccl or --nccl-only")
	case compare:
		return []string{implMscclpp, implNCCL}, nil
	case ncclOnly || impl == implNCCL:
		return []string{implNCCL}, nil
	}
	return []string{implMscclpp}, nil
}
