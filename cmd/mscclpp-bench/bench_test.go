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

// TestOptionsCollectives: every -op value parses, and each collective's properties are nccl-tests':
// whether it takes -o, whether sizes are cut per rank, its busbw factor over 4 ranks and its root
// column.
func TestOptionsCollectives(t *testing.T) {
	tests := []struct {
		op      string
		reduces bool
		perRank bool
		bus4    float64
		root    int
	}{
		{opAllReduce, true, false, 1.5, -1},
		{opAllGather, false, true, 0.75, -1},
		{opReduceScatter, true, true, 0.75, -1},
		{opBroadcast, false, false, 1, broadcastRoot},
		{opAlltoAll, false, true, 0.75, -1},
		{opSendRecv, false, false, 1, -1},
	}
	var names []string
	for _, tt := range tests {
		names = append(names, tt.op)
		o, err := parseOptions([]string{"-op", tt.op}, io.Discard)
		require.NoError(t, err, tt.op)
		assert.Equal(t, tt.op, o.collective)
		assert.Equal(t, tt.reduces, reduces(tt.op), "%s reduces", tt.op)
		assert.Equal(t, tt.perRank, perRank(tt.op), "%s per rank", tt.op)
		assert.Equal(t, tt.bus4, busFactor(tt.op, 4), "%s bus factor", tt.op)
		assert.Equal(t, tt.root, rootColumn(tt.op), "%s root", tt.op)
	}
	assert.Equal(t, collectiveNames, names, "the table covers every -op value, in --help's order")
	assert.Zero(t, busFactor("gather", 4), "unknown collective")
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
	for _, c := range []struct {
		args []string
		err  string // a part of the error
	}{
		{[]string{"-d", "int8"}, `-d "int8"`},
		{[]string{"-o", "prod"}, `-o "prod"`},
		{[]string{"-op", "gather"}, `-op "gather": want allreduce, allgather, reducescatter, broadcast, alltoall or sendrecv`},
		{[]string{"-op", "AllToAll"}, `-op "AllToAll"`},
		{[]string{"-op", "send"}, `-op "send"`},
		{[]string{"-f", "1"}, "-f 1"},
		{[]string{"-b", "2M", "-e", "1M"}, "larger than -e"},
		{[]string{"-n", "0"}, "-n 0"},
		{[]string{"-w", "-1"}, "-w -1"},
		{[]string{"-c", "2"}, "-c 2"},
		{[]string{"-R", "2"}, "-R 2"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseOptions(c.args, io.Discard)
		if assert.Error(t, err, "%v", c.args) {
			assert.Contains(t, err.Error(), c.err, "%v", c.args)
		}
	}
}

func TestOrList(t *testing.T) {
	assert.Equal(t, "", orList(nil))
	assert.Equal(t, "a", orList([]string{"a"}))
	assert.Equal(t, "a or b", orList([]string{"a", "b"}))
	assert.Equal(t, "a, b or c", orList([]string{"a", "b", "c"}))
}

func TestHelp(t *testing.T) {
	var help bytes.Buffer
	_, err := parseOptions([]string{"--help"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, want := range []string{"compare-nccl", "nccl-only", "-impl", "-G", "CUDA graph", "NCCL_NVLS_ENABLE",
		"MSCCLPP_ALLREDUCE_ALGO", "n*N", "AlltoAll", "SendRecv", "alltoall or sendrecv", "rank+1"} {
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
		{"alltoall", 2, 1e9, 1e6, 1, 0.5},
		{"alltoall", 8, 8e9, 2e6, 4, 3.5},
		{"alltoall", 1, 1e9, 1e6, 1, 0},
		{"sendrecv", 2, 1e9, 1e6, 1, 1},
		{"sendrecv", 8, 3e9, 1e6, 3, 3},
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
	assert.Zero(t, avgBusBW(nil))
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
			name:     "alltoall, compare, checked",
			opts:     &options{collective: "alltoall", impls: []string{implMscclpp, implNCCL}, iters: 20, check: true},
			want:     []string{"# collective alltoall", "# in-place alltoall, nccl: timed, not checked", compareHeader},
			dontWant: []string{"out-of-place alltoall", "in-place alltoall, mscclpp"},
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
		{opAlltoAll, false, callBuffers{send, recv, 4, 64, recv, 16}},
		{opAlltoAll, true, callBuffers{recv, recv, 4, 64, recv, 16}},
		{opSendRecv, false, callBuffers{send, recv, 16, 64, recv, 16}},
		{opSendRecv, true, callBuffers{recv, recv, 16, 64, recv, 16}},
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
	// AlltoAll, 4 elements per peer: element 9 is block 2 (from rank 2), which is rank 2's block
	// for rank 1, elements 4..7 of its input: element 4 + 1.
	assert.Equal(t, inputValue(2, 5), b(opAlltoAll).expected(48)(9))
	assert.Equal(t, inputValue(0, 4), b(opAlltoAll).expected(48)(0))
	assert.Equal(t, inputValue(0, 7), b(opSendRecv).expected(48)(7), "rank 1 receives from rank 0")
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

// TestExpectedP2P runs AlltoAll and SendRecv on the host over every rank's input, as the
// collectives define them, and checks each rank's result against expected: exact for every
// datatype and rank count, and a result moved the wrong way is caught.
func TestExpectedP2P(t *testing.T) {
	const per = 5 // AlltoAll: elements per peer
	for _, d := range dataTypes {
		for _, n := range []int{1, 2, 3, 8} {
			count := per * n
			inputs := make([][]byte, n)
			for r := range n {
				inputs[r] = make([]byte, count*d.size)
				fillInput(d, inputs[r], r, count)
			}
			for r := range n {
				b := &bench{o: &options{dtype: d}, rank: r, nranks: n}
				// AlltoAll: block j of rank r's result is block r of rank j's input.
				got, transposed := make([]byte, count*d.size), make([]byte, count*d.size)
				for j := range n {
					copy(got[j*per*d.size:(j+1)*per*d.size], inputs[j][r*per*d.size:(r+1)*per*d.size])
					copy(transposed[j*per*d.size:(j+1)*per*d.size], inputs[r][j*per*d.size:(j+1)*per*d.size])
				}
				b.o.collective = opAlltoAll
				want := b.expected(int64(count * d.size))
				assert.Zero(t, countWrong(d, got, count, want), "%s alltoall rank %d of %d", d.name, r, n)
				if n > 1 {
					assert.NotZero(t, countWrong(d, transposed, count, want), "%s alltoall rank %d of %d: own input", d.name, r, n)
				}
				// SendRecv: rank r receives rank r-1's input.
				next, prev := ringPeers(r, n)
				b.o.collective = opSendRecv
				want = b.expected(int64(count * d.size))
				assert.Zero(t, countWrong(d, inputs[prev], count, want), "%s sendrecv rank %d of %d", d.name, r, n)
				if n > 2 {
					assert.NotZero(t, countWrong(d, inputs[next], count, want), "%s sendrecv rank %d of %d: from the next", d.name, r, n)
				}
			}
		}
	}
}

func TestRingPeers(t *testing.T) {
	for _, c := range []struct{ rank, n, next, prev int }{
		{0, 1, 0, 0}, {0, 2, 1, 1}, {1, 2, 0, 0}, {0, 4, 1, 3}, {3, 4, 0, 2}, {2, 4, 3, 1},
	} {
		next, prev := ringPeers(c.rank, c.n)
		assert.Equal(t, [2]int{c.next, c.prev}, [2]int{next, prev}, "rank %d of %d", c.rank, c.n)
	}
}

// TestUncheckedWhy: out of place everything runs checked; in place NCCL's AlltoAll and SendRecv
// run unchecked, and so does the library's SendRecv on more than 2 ranks (on 2 it is an exchange
// with one peer); the rest (the library's AlltoAll among them) runs checked.
func TestUncheckedWhy(t *testing.T) {
	for _, coll := range collectiveNames {
		for _, impl := range []string{implMscclpp, implNCCL} {
			for _, nranks := range []int{1, 2, 3, 8} {
				assert.Empty(t, uncheckedWhy(coll, impl, false, nranks), "%s %s out of place", coll, impl)
				why := uncheckedWhy(coll, impl, true, nranks)
				switch {
				case coll == opAlltoAll && impl == implNCCL, coll == opSendRecv && (impl == implNCCL || nranks > 2):
					assert.Contains(t, why, "not checked", "%s %s, %d ranks", coll, impl, nranks)
				default:
					assert.Empty(t, why, "%s %s in place, %d ranks", coll, impl, nranks)
				}
			}
		}
	}
}

func TestPlanLines(t *testing.T) {
	both := []string{implMscclpp, implNCCL}
	assert.Empty(t, planLines(&options{collective: opAllReduce, impls: both, check: true}, 4))
	assert.Equal(t, []string{
		"# in-place alltoall, nccl: timed, not checked, as nccl-tests' alltoall_perf does (it reports no errors in place)",
	}, planLines(&options{collective: opAlltoAll, impls: both, check: true}, 4))
	assert.Empty(t, planLines(&options{collective: opAlltoAll, impls: both}, 4), "without -c 1 nothing is said")
	assert.Empty(t, planLines(&options{collective: opAlltoAll, impls: []string{implNCCL}}, 4))
	lines := planLines(&options{collective: opSendRecv, impls: both, check: true}, 4)
	require.Len(t, lines, 2)
	assert.True(t, strings.HasPrefix(lines[0], "# in-place sendrecv, mscclpp: timed, not checked"), lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "# in-place sendrecv, nccl: timed, not checked"), lines[1])
	lines = planLines(&options{collective: opSendRecv, impls: both, check: true}, 2)
	require.Len(t, lines, 1, "on 2 ranks the library's in-place sendrecv is an exchange, checked")
	assert.True(t, strings.HasPrefix(lines[0], "# in-place sendrecv, nccl: timed, not checked"), lines[0])
}

func TestNCCLSupport(t *testing.T) {
	all := func(string) bool { return true }
	none := func(string) bool { return false }
	noAlltoAll := func(name string) bool { return name != "ncclAlltoAll" }
	for _, coll := range collectiveNames {
		assert.NoError(t, ncclSupport(coll, "libnccl.so.2", 22803, all), coll)
	}
	for _, coll := range []string{opAllReduce, opAllGather, opReduceScatter, opBroadcast} {
		assert.NoError(t, ncclSupport(coll, "libnccl.so.2", 20708, none), "%s needs no optional function", coll)
	}
	err := ncclSupport(opAlltoAll, "/opt/nccl/libnccl.so.2", 22703, noAlltoAll)
	require.ErrorIs(t, err, errNCCLLacks)
	assert.Equal(t, "-op alltoall: this NCCL has no ncclAlltoAll (NCCL 2.27.3, /opt/nccl/libnccl.so.2; NCCL 2.28 added it)", err.Error())
	assert.NoError(t, ncclSupport(opSendRecv, "libnccl.so.2", 22703, noAlltoAll))
	err = ncclSupport(opSendRecv, "libnccl.so.2", 20603, func(name string) bool { return name == "ncclGroupStart" || name == "ncclGroupEnd" })
	require.ErrorIs(t, err, errNCCLLacks)
	assert.Contains(t, err.Error(), "has no ncclSend")
}

// fakeNCCL builds, with the C compiler, a library with NCCL's entry points that do nothing but
// log their calls; its ncclCommDestroy fails, and its ncclGetErrorString returns the log and
// starts a new one, so a test reads the log from an error. Without alltoAll it has no ncclAlltoAll, as NCCL
// before 2.28. It skips the test when there is no C compiler.
func fakeNCCL(t *testing.T, alltoAll bool) string {
	t.Helper()
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler")
	}
	const src = `#include <stdio.h>
#include <string.h>
#include <stdint.h>
typedef struct { char internal[128]; } id_t_;
static char log_[4096];
static void logf_(const char *s) { strncat(log_, s, sizeof log_ - strlen(log_) - 1); }
#define CALL(...) do { char b[256]; snprintf(b, sizeof b, __VA_ARGS__); logf_(b); } while (0)
int ncclGetVersion(int *v) { *v = VERSION; return 0; }
int ncclGetUniqueId(id_t_ *id) { memset(id, 0, sizeof *id); return 0; }
int ncclCommInitRank(void **c, int n, id_t_ id, int r) { *c = 0; return 0; }
int ncclCommDestroy(void *c) { return 5; }
static char shown[4096];
const char *ncclGetErrorString(int r) { strcpy(shown, log_); log_[0] = 0; return shown; }
int ncclAllReduce(const void *s, void *r, size_t n, int t, int o, void *c, void *st) { return 0; }
int ncclAllGather(const void *s, void *r, size_t n, int t, void *c, void *st) { return 0; }
int ncclReduceScatter(const void *s, void *r, size_t n, int t, int o, void *c, void *st) { return 0; }
int ncclBroadcast(const void *s, void *r, size_t n, int t, int root, void *c, void *st) { return 0; }
int ncclGroupStart(void) { CALL("ncclGroupStart "); return 0; }
int ncclGroupEnd(void) { CALL("ncclGroupEnd "); return 0; }
int ncclSend(const void *s, size_t n, int t, int peer, void *c, void *st) {
	CALL("ncclSend(%#lx,%zu,%d,%d,%#lx) ", (unsigned long)(uintptr_t)s, n, t, peer, (unsigned long)(uintptr_t)st);
	return peer < 0 ? 4 : 0;
}
int ncclRecv(void *r, size_t n, int t, int peer, void *c, void *st) {
	CALL("ncclRecv(%#lx,%zu,%d,%d) ", (unsigned long)(uintptr_t)r, n, t, peer); return 0;
}
#ifdef ALLTOALL
int ncclAlltoAll(const void *s, void *r, size_t n, int t, void *c, void *st) {
	CALL("ncclAlltoAll(%#lx,%#lx,%zu,%d) ", (unsigned long)(uintptr_t)s, (unsigned long)(uintptr_t)r, n, t); return 0;
}
#endif
`
	dir := t.TempDir()
	c, lib := filepath.Join(dir, "fake.c"), filepath.Join(dir, "libnccl.so.2")
	require.NoError(t, os.WriteFile(c, []byte(src), 0o644))
	args := []string{"-shared", "-fPIC", "-o", lib, c, "-DVERSION=22703"}
	if alltoAll {
		args = append(args, "-DALLTOALL", "-DVERSION=22803")
	}
	out, err := exec.Command(cc, args...).CombinedOutput()
	require.NoError(t, err, string(out))
	return lib
}

// fakeLog is what the fake library logged since it was loaded (see fakeNCCL).
func fakeLog(t *testing.T) string {
	t.Helper()
	err := ncclComm{}.destroy()
	require.Error(t, err)
	return err.(*ncclError).msg
}

// TestNCCLShimP2P drives the shim's AlltoAll and SendRecv through fake NCCL libraries: the group
// is ncclGroupStart, ncclSend to the next rank, ncclRecv from the previous one, ncclGroupEnd, with
// the arguments given; a library without ncclAlltoAll loads, says so, and a call fails instead
// of crashing. The shim keeps the last library loaded: this test loads its own.
func TestNCCLShimP2P(t *testing.T) {
	old := fakeNCCL(t, false)
	require.NoError(t, openNCCL(old))
	v, err := ncclGetVersion()
	require.NoError(t, err)
	assert.Equal(t, 22703, v)
	assert.False(t, ncclHas("ncclAlltoAll"))
	for _, name := range []string{"ncclSend", "ncclRecv", "ncclGroupStart", "ncclGroupEnd"} {
		assert.True(t, ncclHas(name), name)
	}
	assert.False(t, ncclHas("ncclAllReduce"), "only optional entry points are asked about")
	assert.ErrorIs(t, ncclSupport(opAlltoAll, old, v, ncclHas), errNCCLLacks)
	assert.NoError(t, ncclSupport(opSendRecv, old, v, ncclHas))
	var c ncclComm
	err = c.alltoAll(0x1000, 0x2000, 4, ncclFloat32, cuda.Stream{})
	require.ErrorIs(t, err, errNCCLLacks)
	assert.Equal(t, "this NCCL has no ncclAlltoAll", err.Error())

	require.NoError(t, c.sendRecv(0x1000, 0x2000, 16, ncclFloat32, 1, 3, cuda.Stream{}))
	assert.Equal(t, "ncclGroupStart ncclSend(0x1000,16,7,1,0) ncclRecv(0x2000,16,7,3) ncclGroupEnd ", fakeLog(t))
	err = c.sendRecv(0x1000, 0x2000, 16, ncclFloat32, -1, 3, cuda.Stream{})
	var ne *ncclError
	require.ErrorAs(t, err, &ne)
	assert.Equal(t, "ncclSend", ne.op, "the failed call is named")
	assert.Equal(t, 4, ne.code)
	assert.Equal(t, "ncclGroupStart ncclSend(0x1000,16,7,-1,0) ncclGroupEnd ", ne.msg, "no receive after the failed send, and the group is closed")

	lib := fakeNCCL(t, true)
	require.NoError(t, openNCCL(lib))
	assert.True(t, ncclHas("ncclAlltoAll"))
	assert.NoError(t, ncclSupport(opAlltoAll, lib, 22803, ncclHas))
	require.NoError(t, c.alltoAll(0x1000, 0x2000, 4, ncclBfloat16, cuda.Stream{}))
	assert.Equal(t, "ncclAlltoAll(0x1000,0x2000,4,9) ", fakeLog(t))
}
