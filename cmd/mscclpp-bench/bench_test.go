package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
		if err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "K", "1T", "-1", "1.5M", "abc", "99999999999G"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("parseSize(%q) succeeded", bad)
		}
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
		got := sweep(c.lo, c.hi, c.factor, c.align)
		if !equalInts(got, c.want) {
			t.Errorf("%s: sweep(%d, %d, %d, %d) = %v; want %v", c.name, c.lo, c.hi, c.factor, c.align, got, c.want)
		}
	}
	if n := len(sweep(8, 1<<40, 2, 4)); n != 38 {
		t.Errorf("8 B .. 1 TiB by 2: %d sizes, want 38", n)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestOptions(t *testing.T) {
	o, err := parseOptions(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.minBytes != 8 || o.maxBytes != 128<<20 || o.factor != 2 || o.warmup != 5 || o.iters != 20 ||
		!o.check || o.dtype.name != "float" || o.op.name != "sum" || o.collective != "allreduce" || !o.compareNCCL {
		t.Errorf("defaults: %+v", o)
	}
	o, err = parseOptions([]string{"-b", "1K", "-e", "1G", "-f", "4", "-d", "bfloat16", "-o", "max",
		"-op", "allgather", "--json", "x.json", "--plot", "x.png", "-c", "0", "--compare-nccl"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.minBytes != 1024 || o.maxBytes != 1<<30 || o.factor != 4 || o.dtype.nccl != ncclBfloat16 ||
		o.op.nccl != ncclMax || o.collective != "allgather" || o.jsonFile != "x.json" || o.plotFile != "x.png" || o.check {
		t.Errorf("parsed: %+v", o)
	}
	for _, bad := range [][]string{{"-G", "1"}, {"-d", "int8"}, {"-o", "prod"}, {"-op", "alltoall"},
		{"-f", "1"}, {"-b", "2M", "-e", "1M"}, {"-n", "0"}, {"-c", "2"}, {"extra"}} {
		if _, err := parseOptions(bad, io.Discard); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	if _, err := parseOptions([]string{"-G", "1"}, io.Discard); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Errorf("-G: %v", err)
	}
	var help bytes.Buffer
	if _, err := parseOptions([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
	if !strings.Contains(help.String(), notImplementedLine) || !strings.Contains(help.String(), "NCCL_NVLS_ENABLE") {
		t.Errorf("--help does not say NCCL only / NVLS:\n%s", help.String())
	}
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
	} {
		a, b := bandwidths(c.coll, c.n, c.size, c.us)
		if !near(a, c.algbw) || !near(b, c.busbw) {
			t.Errorf("%s n=%d size=%d t=%gus: algbw %g busbw %g; want %g %g", c.coll, c.n, c.size, c.us, a, b, c.algbw, c.busbw)
		}
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-12 && d > -1e-12 }

func TestFormatRow(t *testing.T) {
	out := row{Size: 8, Count: 2, Datatype: "float", Op: "sum", TimeUs: 20.41, AlgBW: 0.0004, BusBW: 0.0004, Wrong: 0}
	in := out
	in.TimeUs, in.InPlace = 19.97, true
	want := "           8             2     float     sum      -1    20.41    0.00    0.00      0    19.97    0.00    0.00      0"
	if got := formatRow(out, in); got != want {
		t.Errorf("formatRow:\n got %q\nwant %q", got, want)
	}
	out = row{Size: 134217728, Count: 33554432, Datatype: "bfloat16", Op: "none", TimeUs: 12345.6, AlgBW: 10.87, BusBW: 5.436, Wrong: -1}
	in = out
	in.TimeUs, in.Wrong = 456.78, 3
	want = "   134217728      33554432  bfloat16    none      -1    12346   10.87    5.44    N/A    456.8   10.87    5.44      3"
	if got := formatRow(out, in); got != want {
		t.Errorf("formatRow:\n got %q\nwant %q", got, want)
	}
	// The columns line up with the header's.
	hdr := strings.Split(tableHeader, "\n")[1]
	if len(strings.TrimRight(hdr, " ")) != len(want) {
		t.Errorf("header is %d wide, rows %d", len(strings.TrimRight(hdr, " ")), len(want))
	}
	if got := avgBusBW([]row{{BusBW: 1}, {BusBW: 2}, {BusBW: 6}}); got != 3 {
		t.Errorf("avgBusBW = %g", got)
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
					if got := decode(d, inputs[r], i); got != inputValue(r, i) {
						t.Fatalf("%s: rank %d element %d round-trips to %g, want %g", d.name, r, i, got, inputValue(r, i))
					}
				}
			}
			for _, op := range redOps {
				got := reduceOnHost(d, op, inputs, count)
				want := func(i int) float64 { return expectedAllReduce(op, n, i) }
				if w := countWrong(d, got, count, want); w != 0 {
					t.Errorf("%s %s n=%d: %d wrong", d.name, op.name, n, w)
				}
				encode(d, got, 5, want(5)+1)
				if w := countWrong(d, got, count, want); w != 1 {
					t.Errorf("%s %s n=%d: one corrupted element counted as %d wrong", d.name, op.name, n, w)
				}
			}
			gathered := bytes.Join(inputs, nil)
			want := func(i int) float64 { return expectedAllGather(count, i) }
			if w := countWrong(d, gathered, count*n, want); w != 0 {
				t.Errorf("%s allgather n=%d: %d wrong", d.name, n, w)
			}
		}
	}
	// Spot values of the expectation itself.
	sum := redOps[0]
	if got := expectedAllReduce(sum, 2, 0); got != inputValue(0, 0)+inputValue(1, 0) || got != 1+4 {
		t.Errorf("sum of element 0 over 2 ranks = %g, want 5", got)
	}
	if got := expectedAllReduce(redOp{"min", ncclMin}, 3, 8); got != 1 { // 9, 1 (rank 1: 11%11+1), 4
		t.Errorf("min = %g, want 1", got)
	}
	if got := expectedAllReduce(redOp{"max", ncclMax}, 3, 8); got != 9 {
		t.Errorf("max = %g, want 9", got)
	}
}

func TestHalfAndBfloat16(t *testing.T) {
	for _, c := range []struct {
		f float32
		h uint16
	}{
		{0, 0x0000}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {11, 0x4980}, {65504, 0x7bff},
		{1.0 / (1 << 24), 0x0001}, {1.0 / (1 << 14), 0x0400}, {2048, 0x6800},
	} {
		if got := float32ToHalf(c.f); got != c.h {
			t.Errorf("float32ToHalf(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
		if got := halfToFloat32(c.h); got != c.f {
			t.Errorf("halfToFloat32(%#04x) = %g, want %g", c.h, got, c.f)
		}
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
		if got := float32ToHalf(c.f); got != c.h {
			t.Errorf("float32ToHalf(%g) = %#04x, want %#04x", c.f, got, c.h)
		}
	}
	for _, c := range []struct {
		f float32
		b uint16
	}{{0, 0}, {1, 0x3f80}, {-2, 0xc000}, {11, 0x4130}, {256, 0x4380}} {
		if got := float32ToBfloat16(c.f); got != c.b {
			t.Errorf("float32ToBfloat16(%g) = %#04x, want %#04x", c.f, got, c.b)
		}
		if got := bfloat16ToFloat32(c.b); got != c.f {
			t.Errorf("bfloat16ToFloat32(%#04x) = %g, want %g", c.b, got, c.f)
		}
	}
	if got := float32ToBfloat16(257); got != 0x4380 { // tie: to even (256)
		t.Errorf("float32ToBfloat16(257) = %#04x, want 0x4380", got)
	}
	if got := float32ToBfloat16(259); got != 0x4382 { // tie: to even (260)
		t.Errorf("float32ToBfloat16(259) = %#04x, want 0x4382", got)
	}
	// Every small integer the inputs and sums use is exact in both.
	for v := float32(0); v <= 256; v++ {
		if halfToFloat32(float32ToHalf(v)) != v || bfloat16ToFloat32(float32ToBfloat16(v)) != v {
			t.Fatalf("%g does not round-trip", v)
		}
	}
}

func sampleRows() []row {
	var rows []row
	for i, size := range []int64{8, 1024, 1 << 20, 1 << 27} {
		for _, inPlace := range []bool{false, true} {
			us := 10 + float64(i*i)*300
			a, b := bandwidths("allreduce", 2, size, us)
			rows = append(rows, row{Impl: "nccl", Collective: "allreduce", Datatype: "float", Op: "sum", Ranks: 2,
				Size: size, Count: size / 4, TimeUs: us, AlgBW: a, BusBW: b, Wrong: 0, InPlace: inPlace})
		}
	}
	return rows
}

func TestJSONRoundTrip(t *testing.T) {
	rows := sampleRows()
	rows[3].Wrong = -1
	var buf bytes.Buffer
	if err := writeJSON(&buf, rows); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"impl": "nccl"`, `"time_us"`, `"in_place": true`, `"busbw"`, notImplementedLine} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("JSON lacks %s:\n%s", key, buf.String())
		}
	}
	got, err := readJSON(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows back, want %d", len(got), len(rows))
	}
	for i := range rows {
		if got[i] != rows[i] {
			t.Errorf("row %d: %+v, want %+v", i, got[i], rows[i])
		}
	}
	path := filepath.Join(t.TempDir(), "rows.json")
	if err := writeJSONFile(path, rows); err != nil {
		t.Fatal(err)
	}
}

func TestPlot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bench.png")
	if err := writePlot(path, sampleRows()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 1000 || !bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s: %d bytes, not a PNG", path, len(data))
	}
	if err := writePlot(path, nil); err == nil {
		t.Error("plot of no rows succeeded")
	}
}

func TestNCCLNotFound(t *testing.T) {
	err := openNCCL("/nonexistent/libnccl.so.2")
	if !errors.Is(err, errNCCLNotFound) || !strings.HasPrefix(err.Error(), "NCCL not found: ") ||
		!strings.Contains(err.Error(), "/nonexistent/libnccl.so.2") {
		t.Errorf("missing file: %v", err)
	}
	// A library that is not NCCL: dlopen succeeds, the symbols are missing.
	if err := openNCCL("libc.so.6"); err == nil || errors.Is(err, errNCCLNotFound) || !strings.Contains(err.Error(), "ncclGetVersion") {
		t.Errorf("libc: %v", err)
	}
	out, _ := exec.Command("ldconfig", "-p").Output()
	if bytes.Contains(out, []byte("libnccl")) {
		t.Skip("this machine has NCCL: the default library loads")
	}
	t.Setenv("NCCL_NVLS_ENABLE", "0")
	t.Setenv("MSCCLPP_NCCL_LIBRARY", "")
	config.NCCLLibrary.Reset()
	if _, err := loadNCCL(); !errors.Is(err, errNCCLNotFound) || !strings.Contains(err.Error(), "libnccl.so.2") {
		t.Errorf("loadNCCL without NCCL: %v", err)
	}
}

func TestEnsureNVLSOff(t *testing.T) {
	t.Setenv("NCCL_NVLS_ENABLE", "1")
	if err := ensureNVLSOff(); err == nil {
		t.Error("NCCL_NVLS_ENABLE=1 accepted")
	}
	t.Setenv("NCCL_NVLS_ENABLE", "0")
	if err := ensureNVLSOff(); err != nil {
		t.Error(err)
	}
	os.Unsetenv("NCCL_NVLS_ENABLE") // t.Setenv restores it afterwards
	if err := ensureNVLSOff(); err != nil || os.Getenv("NCCL_NVLS_ENABLE") != "0" {
		t.Errorf("unset: %v, now %q", err, os.Getenv("NCCL_NVLS_ENABLE"))
	}
}

func TestVersionString(t *testing.T) {
	for code, want := range map[int]string{22803: "2.28.3", 21903: "2.19.3", 2708: "2.7.8"} {
		if got := versionString(code); got != want {
			t.Errorf("versionString(%d) = %s, want %s", code, got, want)
		}
	}
}
