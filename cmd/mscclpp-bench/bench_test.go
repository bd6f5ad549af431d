package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

func TestParseSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"8", 8}, {"1K", 1024}, {"64k", 64 << 10}, {"128M", 128 << 20}, {"1m", 1 << 20},
		{"1G", 1 << 30}, {"4g", 4 << 30}, {" 2K ", 2048},
	} {
		got, err := parseSize(c.in)
		if assert.NoError(t, err, c.in) {
			assert.Equal(t, c.want, got, c.in)
		}
	}
	for _, bad := range []string{"", "K", "1T", "-1", "1.5M", "abc", "99999999999G"} {
		_, err := parseSize(bad)
		assert.Error(t, err, bad)
	}
}

func TestSweep(t *testing.T) {
	for _, c := range []struct {
		name   string
		lo, hi int64
		factor int
		align  int64
		want   []int64
	}{
		{"bytes", 8, 128, 2, 1, []int64{8, 16, 32, 64, 128}},
		{"float", 8, 1024, 4, 4, []int64{8, 32, 128, 512}},
		{"max not on the grid", 8, 100, 2, 4, []int64{8, 16, 32, 64}},
		{"allgather 8 ranks float drops 8 and 16", 8, 128, 2, 32, []int64{32, 64, 128}},
		{"align rounds down", 10, 40, 2, 4, []int64{8, 20, 40}},
		{"single", 1 << 30, 1 << 30, 2, 4, []int64{1 << 30}},
		{"zero min starts at 1", 0, 4, 2, 1, []int64{1, 2, 4}},
		{"bad factor", 8, 128, 1, 1, nil},
	} {
		assert.Equal(t, c.want, sweep(c.lo, c.hi, c.factor, c.align), c.name)
	}
	assert.Len(t, sweep(8, 1<<40, 2, 4), 38, "8 B .. 1 TiB by 2")
	assert.Len(t, sweep(8, 1<<30, 2, 4), 28, "8 B .. 1 GiB by 2, the GPU host's sweep")
}

func TestOptionDefaults(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int64(8), o.minBytes)
	assert.Equal(t, int64(128<<20), o.maxBytes)
	assert.Equal(t, 2, o.factor)
	assert.Equal(t, 5, o.warmup)
	assert.Equal(t, 20, o.iters)
	assert.True(t, o.check)
	assert.Equal(t, "float", o.dtype.name)
	assert.Equal(t, "sum", o.op.name)
	assert.Equal(t, "allreduce", o.collective)
	assert.Equal(t, []string{implMscclpp}, o.impls, "ours alone by default")
	assert.False(t, o.compare())
	assert.False(t, o.uses(implNCCL), "NCCL is not loaded by default")
	assert.Zero(t, o.graph)
}

func TestOptionsParsed(t *testing.T) {
	o, err := parseOptions([]string{"-b", "1K", "-e", "1G", "-f", "4", "-d", "bfloat16", "-o", "max",
		"-op", "allgather", "--json", "x.json", "--plot", "x.png", "-c", "0", "--compare-nccl", "-G", "3", "-R", "1"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int64(1024), o.minBytes)
	assert.Equal(t, int64(1<<30), o.maxBytes)
	assert.Equal(t, 4, o.factor)
	assert.Equal(t, ncclBfloat16, o.dtype.nccl)
	assert.Equal(t, ncclMax, o.op.nccl)
	assert.Equal(t, "allgather", o.collective)
	assert.Equal(t, "x.json", o.jsonFile)
	assert.Equal(t, "x.png", o.plotFile)
	assert.False(t, o.check)
	assert.Equal(t, []string{implMscclpp, implNCCL}, o.impls)
	assert.True(t, o.compare())
	assert.Equal(t, 3, o.graph)
	assert.True(t, o.register)
}

func TestOptionsCollectives(t *testing.T) {
	for _, op := range []string{opAllReduce, opAllGather, opReduceScatter, opBroadcast} {
		o, err := parseOptions([]string{"-op", op}, io.Discard)
		require.NoError(t, err, op)
		assert.Equal(t, op, o.collective)
	}
}

func TestOptionsImplAndGraph(t *testing.T) {
	for _, c := range []struct {
		args  []string
		impls []string
		graph int
		err   string // a part of the error; "" for none
	}{
		{args: nil, impls: []string{"mscclpp"}},
		{args: []string{"-G", "0"}, impls: []string{"mscclpp"}},
		{args: []string{"-G", "1"}, impls: []string{"mscclpp"}, graph: 1},
		{args: []string{"-G", "10", "--compare-nccl"}, impls: []string{"mscclpp", "nccl"}, graph: 10},
		{args: []string{"--compare-nccl", "-G", "0"}, impls: []string{"mscclpp", "nccl"}},
		{args: []string{"-compare-nccl"}, impls: []string{"mscclpp", "nccl"}},
		{args: []string{"--nccl-only"}, impls: []string{"nccl"}},
		{args: []string{"-impl", "nccl"}, impls: []string{"nccl"}},
		{args: []string{"-impl", "nccl", "--nccl-only", "-G", "1"}, impls: []string{"nccl"}, graph: 1},
		{args: []string{"-impl", "mscclpp"}, impls: []string{"mscclpp"}},
		{args: []string{"-G", "-1"}, err: "-G -1"},
		{args: []string{"-G", "x"}, err: "invalid value"},
		{args: []string{"-impl", "rccl"}, err: `-impl "rccl"`},
		{args: []string{"-impl", "mscclpp", "--nccl-only"}, err: "contradicts"},
		{args: []string{"--compare-nccl", "--nccl-only"}, err: "--compare-nccl"},
		{args: []string{"--compare-nccl", "-impl", "nccl"}, err: "--compare-nccl"},
	} {
		name := strings.Join(c.args, " ")
		o, err := parseOptions(c.args, io.Discard)
		if c.err != "" {
			if assert.Error(t, err, name) {
				assert.Contains(t, err.Error(), c.err, name)
			}
			continue
		}
		if assert.NoError(t, err, name) {
			assert.Equal(t, c.impls, o.impls, name)
			assert.Equal(t, c.graph, o.graph, name)
		}
	}
}

func TestOptionsRefused(t *testing.T) {
	for _, bad := range [][]string{{"-d", "int8"}, {"-o", "prod"}, {"-op", "alltoall"},
		{"-f", "1"}, {"-b", "2M", "-e", "1M"}, {"-n", "0"}, {"-w", "-1"}, {"-c", "2"}, {"-R", "2"}, {"extra"}} {
		_, err := parseOptions(bad, io.Discard)
		assert.Error(t, err, "%v", bad)
	}
}

func TestHelp(t *testing.T) {
	var help bytes.Buffer
	_, err := parseOptions([]string{"--help"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, want := range []string{"compare-nccl", "nccl-only", "-impl", "-G", "CUDA graph", "NCCL_NVLS_ENABLE",
		"MSCCLPP_ALLREDUCE_ALGO", "n*N"} {
		assert.Contains(t, help.String(), want)
	}
	assert.NotContains(t, help.String(), "NCCL only")
}

func TestDataTypesMatchCollectives(t *testing.T) {
	for _, d := range dataTypes {
		assert.True(t, d.coll.Valid(), d.name)
		assert.Equal(t, int(d.nccl), int(d.coll), "%s: NCCL's and the library's values differ", d.name)
		assert.Equal(t, d.size, d.coll.Size(), d.name)
	}
	for _, op := range redOps {
		assert.True(t, op.coll.Valid(), op.name)
		assert.Equal(t, int(op.nccl), int(op.coll), op.name)
		assert.Equal(t, op.name, op.coll.String())
	}
}

func TestImplNames(t *testing.T) {
	assert.Equal(t, "mscclpp", mscclppImpl{}.name())
	assert.Equal(t, "nccl", ncclImpl{}.name())
}

func TestBusBandwidth(t *testing.T) {
	for _, c := range []struct {
		coll         string
		n            int
		size         int64
		us           float64
		algbw, busbw float64
	}{
		{"allreduce", 1, 1e9, 1e6, 1, 0},
		{"allreduce", 2, 1e9, 1e6, 1, 1},
		{"allreduce", 4, 2e9, 1e6, 2, 3},
		{"allreduce", 8, 1e9, 5e5, 2, 3.5},
		{"allgather", 2, 1e9, 1e6, 1, 0.5},
		{"allgather", 8, 8e9, 1e6, 8, 7},
		{"allgather", 2, 1e9, 0, 0, 0},
		{"reducescatter", 4, 4e9, 1e6, 4, 3},
		{"broadcast", 8, 1e9, 1e6, 1, 1},
	} {
		a, b := bandwidths(c.coll, c.n, c.size, c.us)
		assert.InDelta(t, c.algbw, a, 1e-12, "%s n=%d size=%d t=%gus algbw", c.coll, c.n, c.size, c.us)
		assert.InDelta(t, c.busbw, b, 1e-12, "%s n=%d size=%d t=%gus busbw", c.coll, c.n, c.size, c.us)
	}
}

func TestFormatRow(t *testing.T) {
	small := row{Size: 8, Count: 2, Datatype: "float", Op: "sum", TimeUs: 20.41, AlgBW: 0.0004, BusBW: 0.0004, Wrong: 0}
	smallIn := small
	smallIn.TimeUs, smallIn.InPlace = 19.97, true
	big := row{Size: 134217728, Count: 33554432, Datatype: "bfloat16", Op: "none", TimeUs: 12345.6, AlgBW: 10.87, BusBW: 5.436, Wrong: -1}
	bigIn := big
	bigIn.TimeUs, bigIn.Wrong = 456.78, 3
	for _, c := range []struct {
		out, in row
		want    string
	}{
		{small, smallIn, "           8             2     float     sum      -1    20.41    0.00    0.00      0    19.97    0.00    0.00      0"},
		{big, bigIn, "   134217728      33554432  bfloat16    none      -1    12346   10.87    5.44    N/A    456.8   10.87    5.44      3"},
	} {
		got := formatRow(c.out, c.in)
		assert.Equal(t, c.want, got)
		assertAligned(t, tableHeader, got)
	}
	assert.Equal(t, 3.0, avgBusBW([]row{{BusBW: 1}, {BusBW: 2}, {BusBW: 6}}))
}

func TestFormatCompareRow(t *testing.T) {
	mk := func(impl string, size int64, us, algbw, busbw float64, wrong int64, inPlace bool) row {
		return row{Impl: impl, Size: size, Count: size / 4, Datatype: "float", Op: "sum", Ranks: 2,
			TimeUs: us, AlgBW: algbw, BusBW: busbw, Wrong: wrong, InPlace: inPlace}
	}
	for _, c := range []struct {
		name       string
		ours, nccl [2]row
		want       string
	}{
		{
			name: "small, we are faster",
			ours: [2]row{mk("mscclpp", 8, 5.12, 0.0016, 0.0016, 0, false), mk("mscclpp", 8, 4.9, 0.0016, 0.0016, 0, true)},
			nccl: [2]row{mk("nccl", 8, 6.35, 0.0013, 0.0013, 0, false), mk("nccl", 8, 6.21, 0.0013, 0.0013, 0, true)},
			want: "           8             2     float     sum      -1" +
				"     5.12    6.35   0.81     0.00    0.00     0.00    0.00        0       0" +
				"     4.90    6.21   0.79     0.00    0.00     0.00    0.00        0       0",
		},
		{
			name: "1 GiB, wrong results and an unchecked run",
			ours: [2]row{mk("mscclpp", 1<<30, 3412.5, 314.65, 314.65, 12, false), mk("mscclpp", 1<<30, 3500, 306.78, 306.78, -1, true)},
			nccl: [2]row{mk("nccl", 1<<30, 3394.1, 316.36, 316.36, 0, false), mk("nccl", 1<<30, 12345.6, 86.97, 86.97, -1, true)},
			want: "  1073741824     268435456     float     sum      -1" +
				"   3412.5  3394.1   1.01   314.65  316.36   314.65  316.36       12       0" +
				"   3500.0   12346   0.28   306.78   86.97   306.78   86.97      N/A     N/A",
		},
		{
			name: "no NCCL time",
			ours: [2]row{mk("mscclpp", 1024, 7, 0.15, 0.15, 0, false), mk("mscclpp", 1024, 7, 0.15, 0.15, 0, true)},
			nccl: [2]row{mk("nccl", 1024, 0, 0, 0, 0, false), mk("nccl", 1024, 0, 0, 0, 0, true)},
			want: "        1024           256     float     sum      -1" +
				"     7.00    0.00    N/A     0.15    0.00     0.15    0.00        0       0" +
				"     7.00    0.00    N/A     0.15    0.00     0.15    0.00        0       0",
		},
	} {
		got := formatCompareRow(c.ours, c.nccl)
		assert.Equal(t, c.want, got, c.name)
		assertAligned(t, compareHeader, got)
	}
}

func TestCompareHeader(t *testing.T) {
	lines := strings.Split(compareHeader, "\n")
	require.Len(t, lines, 3)
	for _, l := range lines {
		assert.True(t, strings.HasPrefix(l, "#"), l)
	}
	assert.Contains(t, lines[0], "out-of-place")
	assert.Contains(t, lines[0], "in-place")
	assert.Less(t, strings.Index(lines[0], "out-of-place"), strings.Index(lines[0], "in-place"))
	for _, w := range []string{"size", "count", "type", "redop", "root"} {
		assert.Equal(t, 1, strings.Count(lines[1], w), "%q in %q", w, lines[1])
	}
	for _, w := range []string{"time (us)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"} {
		assert.Equal(t, 2, strings.Count(lines[1], w), "%q in %q", w, lines[1])
	}
	assert.Equal(t, 8, strings.Count(lines[2], "mscclpp"))
	assert.Equal(t, 8, strings.Count(lines[2], "nccl"))
	assert.Equal(t, 2, strings.Count(lines[2], "ratio"))
}

// assertAligned checks that every column label in the last line of header ends where a field
// of row ends, and that the header is no wider than the row: labels are right-aligned over their
// columns, as in nccl-tests.
func assertAligned(t *testing.T, header, row string) {
	t.Helper()
	lines := strings.Split(header, "\n")
	last := lines[len(lines)-1]
	assert.LessOrEqual(t, len(strings.TrimRight(last, " ")), len(row), "header wider than the row")
	ends := map[int]bool{}
	for i := 0; i < len(row); i++ {
		if row[i] != ' ' && (i+1 == len(row) || row[i+1] == ' ') {
			ends[i] = true
		}
	}
	// The header's last line: "#", the units of size and count, then a label or unit per column.
	fields := strings.Fields(last[1:])
	pos := 1
	for _, f := range fields {
		i := strings.Index(last[pos:], f) + pos
		end := i + len(f) - 1
		pos = end + 1
		assert.True(t, ends[end], "%q ends at %d, no field of the row does:\n%s\n%s", f, end, last, row)
	}
}

func TestRatioText(t *testing.T) {
	for _, c := range []struct {
		ours, theirs float64
		want         string
	}{
		{5, 10, "0.50"}, {10, 5, "2.00"}, {3412.5, 3394.1, "1.01"}, {1, 0, "N/A"}, {0, 1, "N/A"}, {-1, 1, "N/A"},
	} {
		assert.Equal(t, c.want, ratioText(c.ours, c.theirs), "%g/%g", c.ours, c.theirs)
	}
}

func sampleRows(impls ...string) []row {
	var rows []row
	for i, size := range []int64{8, 1024, 1 << 20, 1 << 27} {
		for _, inPlace := range []bool{false, true} {
			for k, impl := range impls {
				us := (10 + float64(i*i)*300) * float64(k+1) // nccl twice as slow as mscclpp
				a, b := bandwidths("allreduce", 2, size, us)
				rows = append(rows, row{Impl: impl, Collective: "allreduce", Datatype: "float", Op: "sum", Ranks: 2,
					Size: size, Count: size / 4, TimeUs: us, AlgBW: a, BusBW: b, Wrong: 0, InPlace: inPlace, Graph: 1})
			}
		}
	}
	return rows
}

func TestSummaryLines(t *testing.T) {
	one := &options{check: true, impls: []string{implMscclpp}}
	rows := []row{{Impl: "mscclpp", BusBW: 1, Wrong: 0}, {Impl: "mscclpp", BusBW: 3, Wrong: 2, InPlace: true}}
	assert.Equal(t, []string{"# Errors with wrong results: 2 FAILED", "# Avg bus bandwidth    : 2 "}, summaryLines(one, rows))
	one.check = false
	assert.Equal(t, []string{"# Avg bus bandwidth    : 2 "}, summaryLines(one, rows))

	both := &options{check: true, impls: []string{implMscclpp, implNCCL}}
	rows = []row{
		{Impl: "mscclpp", Size: 8, TimeUs: 5, BusBW: 1, Wrong: 0},
		{Impl: "nccl", Size: 8, TimeUs: 10, BusBW: 0.5, Wrong: 0},
		{Impl: "mscclpp", Size: 8, TimeUs: 20, BusBW: 3, Wrong: 0, InPlace: true},
		{Impl: "nccl", Size: 8, TimeUs: 10, BusBW: 6, Wrong: 1, InPlace: true},
	}
	assert.Equal(t, []string{
		"# Errors with wrong results: 1 FAILED (mscclpp 0, nccl 1)",
		"# Avg bus bandwidth (mscclpp): 2 ",
		"# Avg bus bandwidth (nccl)   : 3.25 ",
		"# Time ratio mscclpp/nccl: geometric mean 1.000 over 2 sizes x placements (out-of-place 0.500, in-place 2.000)",
	}, summaryLines(both, rows))
}

func TestMeanRatio(t *testing.T) {
	rows := sampleRows(implMscclpp, implNCCL)
	m, n := meanRatio(rows, nil)
	assert.InDelta(t, 0.5, m, 1e-12)
	assert.Equal(t, 8, n)
	m, n = meanRatio(rows, new(true))
	assert.InDelta(t, 0.5, m, 1e-12)
	assert.Equal(t, 4, n)
	m, n = meanRatio(sampleRows(implMscclpp), nil)
	assert.Zero(t, m)
	assert.Zero(t, n)
}

func TestAlgoText(t *testing.T) {
	reset := func() { config.AllReduceAlgo.Reset(); config.AllGatherAlgo.Reset() }
	t.Cleanup(reset)
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unset", nil, "algorithms chosen by size and rank count (MSCCLPP_ALLREDUCE_ALGO, MSCCLPP_ALLGATHER_ALGO unset)"},
		{"empty", map[string]string{"MSCCLPP_ALLREDUCE_ALGO": ""},
			"algorithms chosen by size and rank count (MSCCLPP_ALLREDUCE_ALGO, MSCCLPP_ALLGATHER_ALGO unset)"},
		{"allreduce", map[string]string{"MSCCLPP_ALLREDUCE_ALGO": "RSAG"}, "algorithm selection MSCCLPP_ALLREDUCE_ALGO=rsag"},
		{"both", map[string]string{"MSCCLPP_ALLREDUCE_ALGO": "packet", "MSCCLPP_ALLGATHER_ALGO": "put"},
			"algorithm selection MSCCLPP_ALLREDUCE_ALGO=packet, MSCCLPP_ALLGATHER_ALGO=put"},
		{"malformed", map[string]string{"MSCCLPP_ALLGATHER_ALGO": "ring"},
			`algorithm selection MSCCLPP_ALLGATHER_ALGO="ring" ignored (malformed), auto in effect`},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, name := range []string{"MSCCLPP_ALLREDUCE_ALGO", "MSCCLPP_ALLGATHER_ALGO"} {
				t.Setenv(name, "")
				os.Unsetenv(name)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			reset()
			assert.Equal(t, c.want, algoText(os.LookupEnv, config.AllReduceAlgo, config.AllGatherAlgo))
		})
	}
}

func TestHeaderLines(t *testing.T) {
	t.Setenv("MSCCLPP_ALLREDUCE_ALGO", "rsag")
	config.AllReduceAlgo.Reset()
	t.Cleanup(config.AllReduceAlgo.Reset)
	devs := []string{"#  Rank  0 Pid      1 on       host device  0 [0000:01:00.0] GPU"}
	for _, c := range []struct {
		name     string
		opts     *options
		want     []string
		dontWant []string
	}{
		{
			name:     "ours",
			opts:     &options{collective: "allreduce", impls: []string{implMscclpp}, iters: 20},
			want:     []string{"# mscclpp: this library's collectives", "MSCCLPP_ALLREDUCE_ALGO=rsag", "graph: 0", "time: wall clock around the timed iterations", tableHeader},
			dontWant: []string{"# nccl:", "ratio ="},
		},
		{
			name:     "compare, graph",
			opts:     &options{collective: "allreduce", impls: []string{implMscclpp, implNCCL}, iters: 20, graph: 1},
			want:     []string{"# mscclpp:", "# nccl: NCCL 2.28.3", "ratio = mscclpp time / nccl time", "graph: 1", "1 launches of a CUDA graph of 20 captured calls", compareHeader},
			dontWant: []string{tableHeader},
		},
		{
			name:     "nccl only",
			opts:     &options{collective: "allgather", impls: []string{implNCCL}, iters: 5},
			want:     []string{"# nccl: NCCL 2.28.3", tableHeader},
			dontWant: []string{"# mscclpp:", "MSCCLPP_ALLREDUCE_ALGO", "ratio ="},
		},
	} {
		b := &bench{o: c.opts, nranks: 2, ncclVersion: 22803}
		text := strings.Join(b.headerLines(devs), "\n")
		for _, w := range append(c.want, devs[0]) {
			assert.Contains(t, text, w, c.name)
		}
		for _, w := range c.dontWant {
			assert.NotContains(t, text, w, c.name)
		}
	}
}

// reduceOnHost reduces the ranks' encoded buffers element by element in datatype d, as the
// device would, and returns the encoded result.
func reduceOnHost(d dataType, op redOp, inputs [][]byte, count int) []byte {
	out := make([]byte, count*d.size)
	for i := range count {
		acc := decode(d, inputs[0], i)
		for _, in := range inputs[1:] {
			v := decode(d, in, i)
			switch op.nccl {
			case ncclSum:
				acc += v
			case ncclMin:
				acc = min(acc, v)
			case ncclMax:
				acc = max(acc, v)
			}
		}
		encode(d, out, i, acc)
	}
	return out
}

func TestExpectedResults(t *testing.T) {
	const count = 37
	for _, d := range dataTypes {
		for _, n := range []int{1, 2, 3, 8} {
			inputs := make([][]byte, n)
			for r := range n {
				inputs[r] = make([]byte, count*d.size)
				fillInput(d, inputs[r], r, count)
				for i := range count {
					require.Equal(t, inputValue(r, i), decode(d, inputs[r], i), "%s: rank %d element %d round trip", d.name, r, i)
				}
			}
			for _, op := range redOps {
				got := reduceOnHost(d, op, inputs, count)
				want := func(i int) float64 { return expectedAllReduce(op, n, i) }
				assert.Zero(t, countWrong(d, got, count, want), "%s %s n=%d", d.name, op.name, n)
				encode(d, got, 5, want(5)+1)
				assert.Equal(t, int64(1), countWrong(d, got, count, want), "%s %s n=%d: one corrupted element", d.name, op.name, n)
			}
			gathered := bytes.Join(inputs, nil)
			want := func(i int) float64 { return expectedAllGather(count, i) }
			assert.Zero(t, countWrong(d, gathered, count*n, want), "%s allgather n=%d", d.name, n)
		}
	}
	// Spot values of the expectation itself.
	sum, minOp, maxOp := redOps[0], redOps[1], redOps[2]
	assert.Equal(t, 5.0, expectedAllReduce(sum, 2, 0))   // 1 + 4
	assert.Equal(t, 1.0, expectedAllReduce(minOp, 3, 8)) // 9, 1 (rank 1: 11%11+1), 4
	assert.Equal(t, 9.0, expectedAllReduce(maxOp, 3, 8))
}

func TestHalfAndBfloat16(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{0, 0x0000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {11, 0x4980}, {65504, 0x7bff},
		{1.0 / (1 << 24), 0x0001}, {1.0 / (1 << 14), 0x0400}, {2048, 0x6800},
	} {
		assert.Equal(t, c.h, float32ToHalf(c.f), "float32ToHalf(%g)", c.f)
		assert.Equal(t, c.f, halfToFloat32(c.h), "halfToFloat32(%#04x)", c.h)
	}
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{65520, 0x7c00},           // rounds up to +Inf
		{2049, 0x6800},            // tie: to even (2048)
		{2051, 0x6802},            // tie: to even (2052)
		{1.0 / (1 << 25), 0x0000}, // tie at the smallest subnormal: to even (0)
		{1.5 / (1 << 24), 0x0002}, // tie: to even (2 * 2^-24)
		{1e-10, 0x0000},           // underflow
	} {
		assert.Equal(t, c.h, float32ToHalf(c.f), "float32ToHalf(%g)", c.f)
	}
	for _, c := range []struct {
		f float32
		b uint16
	}{{0, 0}, {1, 0x3f80}, {-2, 0xc000}, {11, 0x4130}, {256, 0x4380}} {
		assert.Equal(t, c.b, float32ToBfloat16(c.f), "float32ToBfloat16(%g)", c.f)
		assert.Equal(t, c.f, bfloat16ToFloat32(c.b), "bfloat16ToFloat32(%#04x)", c.b)
	}
	assert.Equal(t, uint16(0x4380), float32ToBfloat16(257)) // tie: to even (256)
	assert.Equal(t, uint16(0x4382), float32ToBfloat16(259)) // tie: to even (260)
	// Every small integer the inputs and sums use is exact in both.
	for v := float32(0); v <= 256; v++ {
		require.Equal(t, v, halfToFloat32(float32ToHalf(v)))
		require.Equal(t, v, bfloat16ToFloat32(float32ToBfloat16(v)))
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rows := sampleRows(implMscclpp, implNCCL)
	rows[3].Wrong = -1
	var buf bytes.Buffer
	require.NoError(t, writeJSON(&buf, rows))
	for _, key := range []string{`"impl": "mscclpp"`, `"impl": "nccl"`, `"time_us"`, `"in_place": true`, `"busbw"`, `"graph": 1`, `"note"`} {
		assert.Contains(t, buf.String(), key)
	}
	got, err := readJSON(&buf)
	require.NoError(t, err)
	assert.Equal(t, rows, got)
	require.NoError(t, writeJSONFile(filepath.Join(t.TempDir(), "rows.json"), rows))
}

func TestPlot(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []row
	}{
		{"both", sampleRows(implMscclpp, implNCCL)},
		{"ours", sampleRows(implMscclpp)},
		{"nccl", sampleRows(implNCCL)},
	} {
		path := filepath.Join(t.TempDir(), "bench.png")
		require.NoError(t, writePlot(path, c.rows), c.name)
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Greater(t, len(data), 1000, c.name)
		assert.True(t, bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")), "%s: not a PNG", c.name)
	}
	assert.Error(t, writePlot(filepath.Join(t.TempDir(), "none.png"), nil))
}

func TestNCCLNotFound(t *testing.T) {
	err := openNCCL("/nonexistent/libnccl.so.2")
	require.ErrorIs(t, err, errNCCLNotFound)
	assert.True(t, strings.HasPrefix(err.Error(), "NCCL not found: "), err.Error())
	assert.Contains(t, err.Error(), "/nonexistent/libnccl.so.2")
	// A library that is not NCCL: dlopen succeeds, the symbols are missing.
	err = openNCCL("libc.so.6")
	require.Error(t, err)
	assert.NotErrorIs(t, err, errNCCLNotFound)
	assert.Contains(t, err.Error(), "ncclGetVersion")
	out, _ := exec.Command("ldconfig", "-p").Output()
	if bytes.Contains(out, []byte("libnccl")) {
		t.Skip("this machine has NCCL: the default library loads")
	}
	t.Setenv("NCCL_NVLS_ENABLE", "0")
	t.Setenv("MSCCLPP_NCCL_LIBRARY", "")
	config.NCCLLibrary.Reset()
	_, err = loadNCCL()
	assert.ErrorIs(t, err, errNCCLNotFound)
	assert.Contains(t, err.Error(), "libnccl.so.2")
}

func TestEnsureNVLSOff(t *testing.T) {
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	assert.Error(t, ensureNVLSOff())
	t.Setenv("NCCL_NVLS_ENABLE", "0")
	assert.NoError(t, ensureNVLSOff())
	os.Unsetenv("NCCL_NVLS_ENABLE") // t.Setenv restores it afterwards
	assert.NoError(t, ensureNVLSOff())
	assert.Equal(t, "0", os.Getenv("NCCL_NVLS_ENABLE"))
}

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22803: "2.28.3", 21903: "2.19.3", 2708: "2.7.8"} {
		assert.Equal(t, want, versionString(code), code)
	}
}

// TestCallBuffers: each collective's arguments, input and checked result, out of place and in
// place as nccl-tests lays them out, on rank 1 of 4 with 16 float elements (64 bytes).
func TestCallBuffers(t *testing.T) {
	const send, recv = cuda.DevicePtr(0x100000), cuda.DevicePtr(0x200000)
	f := dataTypes[0]
	require.Equal(t, 4, f.size)
	tests := []struct {
		collective string
		inPlace    bool
		want       callBuffers
	}{
		{opAllReduce, false, callBuffers{send, recv, 16, 64, recv, 16}},
		{opAllReduce, true, callBuffers{recv, recv, 16, 64, recv, 16}},
		{opBroadcast, false, callBuffers{send, recv, 16, 64, recv, 16}},
		{opBroadcast, true, callBuffers{recv, recv, 16, 64, recv, 16}},
		{opAllGather, false, callBuffers{send, recv, 4, 16, recv, 16}},
		{opAllGather, true, callBuffers{recv + 16, recv, 4, 16, recv, 16}},
		{opReduceScatter, false, callBuffers{send, recv, 4, 64, recv, 4}},
		{opReduceScatter, true, callBuffers{recv, recv + 16, 4, 64, recv + 16, 4}},
	}
	for _, tt := range tests {
		b := &bench{o: &options{collective: tt.collective, dtype: f}, rank: 1, nranks: 4, send: send, recv: recv}
		assert.Equal(t, tt.want, b.buffers(64, tt.inPlace), "%s in place %v", tt.collective, tt.inPlace)
	}
}

// TestExpectedPerCollective: rank 1 of 3 expects, at element i, the reduction of element
// 4 + i of the inputs (ReduceScatter of 12 elements), rank 0's input (Broadcast), and
// rank i/4's element i%4 (AllGather).
func TestExpectedPerCollective(t *testing.T) {
	f, sum := dataTypes[0], redOps[0]
	b := func(collective string) *bench {
		return &bench{o: &options{collective: collective, dtype: f, op: sum}, rank: 1, nranks: 3}
	}
	for i := range 4 {
		assert.Equal(t, expectedAllReduce(sum, 3, 4+i), b(opReduceScatter).expected(48)(i))
		assert.Equal(t, inputValue(0, i), b(opBroadcast).expected(48)(i))
		assert.Equal(t, expectedAllReduce(sum, 3, i), b(opAllReduce).expected(48)(i))
	}
	assert.Equal(t, inputValue(2, 1), b(opAllGather).expected(48)(9))
	assert.Equal(t, broadcastRoot, rootColumn(opBroadcast))
	assert.Equal(t, -1, rootColumn(opReduceScatter))
	assert.True(t, reduces(opReduceScatter))
	assert.False(t, reduces(opBroadcast))
	assert.True(t, perRank(opReduceScatter))
	assert.False(t, perRank(opBroadcast))
}

func TestNCCLLibOption(t *testing.T) {
	o, err := parseOptions([]string{"--compare-nccl", "--nccl-lib", "/opt/nccl/libnccl.so.2"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "/opt/nccl/libnccl.so.2", o.ncclLib)
	defer func(old string) { ncclLibOption = old }(ncclLibOption)
	ncclLibOption = o.ncclLib
	assert.Equal(t, "/opt/nccl/libnccl.so.2", ncclLibraryPath())
}

// This project's NCCL layer is refused before dlopen, which would start its Go runtime in this
// one: a stand-in library that defines the layer's marker symbol, built with the C compiler.
func TestNCCLLibRefusesThisProjectsLayer(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	dir := t.TempDir()
	src, lib := filepath.Join(dir, "layer.c"), filepath.Join(dir, "libnccl.so.2")
	require.NoError(t, os.WriteFile(src, []byte("const int mscclppNcclLayer = 22803;\n"), 0o644))
	out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.True(t, thisProjectsLayer(lib))
	err = openNCCL(lib)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this project's NCCL layer")
	assert.False(t, thisProjectsLayer("/nonexistent/libnccl.so.2"))
}
