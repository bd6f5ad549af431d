package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/mscclpp-go/mscclpp/internal/config"
)

// row is one measurement: one implementation, collective, size and placement.
type row struct {
	Impl       string  `json:"impl"` // "mscclpp" (the library's collectives) or "nccl"
	Collective string  `json:"collective"`
	Datatype   string  `json:"datatype"`
	Op         string  `json:"op"` // "none" for the collectives that do not reduce
	Ranks      int     `json:"ranks"`
	Size       int64   `json:"size"`  // bytes; AllGather: the total each rank receives; ReduceScatter: sends; AlltoAll: either buffer; SendRecv: sent
	Count      int64   `json:"count"` // elements, size / element size
	TimeUs     float64 `json:"time_us"`
	AlgBW      float64 `json:"algbw"` // GB/s (1e9 bytes per second)
	BusBW      float64 `json:"busbw"` // GB/s
	Wrong      int64   `json:"wrong"` // -1 when not checked
	InPlace    bool    `json:"in_place"`
	Graph      int     `json:"graph"`                // -G: CUDA graph launches timed; 0: direct calls
	Registered bool    `json:"registered,omitempty"` // -R 1: the library's buffers were registered
}

// busFactor is busbw/algbw for a collective over n ranks, as nccl-tests defines it.
func busFactor(collective string, n int) float64 {
	if n <= 0 {
		return 0
	}
	switch collective {
	case opAllReduce:
		return 2 * float64(n-1) / float64(n)
	case opAllGather, opReduceScatter, opAlltoAll:
		return float64(n-1) / float64(n)
	case opBroadcast, opSendRecv:
		return 1
	}
	return 0
}

// bandwidths returns algbw and busbw in GB/s for size bytes moved in timeUs microseconds.
func bandwidths(collective string, n int, size int64, timeUs float64) (algbw, busbw float64) {
	if timeUs <= 0 {
		return 0, 0
	}
	algbw = float64(size) / 1e9 / (timeUs / 1e6)
	return algbw, algbw * busFactor(collective, n)
}

// timeText formats a time in microseconds as nccl-tests does.
func timeText(us float64) string {
	switch {
	case us >= 10000:
		return fmt.Sprintf("%7.0f", us)
	case us >= 100:
		return fmt.Sprintf("%7.1f", us)
	default:
		return fmt.Sprintf("%7.2f", us)
	}
}

// wrongValue is a #wrong column: the count, or N/A when not checked.
func wrongValue(w int64) string {
	if w < 0 {
		return "N/A"
	}
	return strconv.FormatInt(w, 10)
}

// ratioText is a ratio column: ours / theirs, or N/A when either is not positive.
func ratioText(ours, theirs float64) string {
	if ours <= 0 || theirs <= 0 {
		return "N/A"
	}
	return fmt.Sprintf("%.2f", ours/theirs)
}

// rootColumn is the root column of a row, as nccl-tests fills it: the Broadcast's root, else -1.
func rootColumn(collective string) int {
	if collective == opBroadcast {
		return broadcastRoot
	}
	return -1
}

// measuredText is r's time, algbw, busbw and #wrong as the tables print them.
func measuredText(r row) (time, algbw, busbw, wrong string) {
	return timeText(r.TimeUs), fmt.Sprintf("%.2f", r.AlgBW), fmt.Sprintf("%.2f", r.BusBW), wrongValue(r.Wrong)
}

// formatRow is one size's line: out-of-place then in-place, in nccl-tests' columns.
func formatRow(out, in row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", out.Size, out.Count, out.Datatype, out.Op, rootColumn(out.Collective))
	for _, r := range []row{out, in} {
		t, a, bus, w := measuredText(r)
		fmt.Fprintf(&b, "  %7s  %6s  %6s  %5s", t, a, bus, w)
	}
	return b.String()
}

// tableHeader is the column header, as nccl-tests prints it.
const tableHeader = `#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       `

// formatCompareRow is one size's line of --compare-nccl: for out-of-place, then in-place, the
// time of each implementation and their ratio (mscclpp / nccl), then algbw, busbw and #wrong of
// each. ours and nccl hold the out-of-place and in-place rows of each implementation.
func formatCompareRow(ours, nccl [2]row) string {
	var b strings.Builder
	o := ours[0]
	fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", o.Size, o.Count, o.Datatype, o.Op, rootColumn(o.Collective))
	for k := range 2 {
		mt, ma, mb, mw := measuredText(ours[k])
		nt, na, nb, nw := measuredText(nccl[k])
		fmt.Fprintf(&b, "  %7s %7s %6s  %7s %7s  %7s %7s  %7s %7s",
			mt, nt, ratioText(ours[k].TimeUs, nccl[k].TimeUs), ma, na, mb, nb, mw, nw)
	}
	return b.String()
}

// compareGroups are the column groups of one placement in formatCompareRow: a label over
// sub-columns of the given widths, one space apart; groups are two spaces apart.
var compareGroups = []struct {
	label  string
	sub    []string
	widths []int
}{
	{"time (us)", []string{implMscclpp, implNCCL, "ratio"}, []int{7, 7, 6}},
	{"algbw (GB/s)", []string{implMscclpp, implNCCL}, []int{7, 7}},
	{"busbw (GB/s)", []string{implMscclpp, implNCCL}, []int{7, 7}},
	{"#wrong", []string{implMscclpp, implNCCL}, []int{7, 7}},
}

// compareHeader is the column header of --compare-nccl, aligned with formatCompareRow.
var compareHeader = func() string {
	const (
		names = "#       size         count      type   redop    root"
		units = "#        (B)    (elements)"
	)
	width := len(names) // of the first five columns of a row
	place := []string{"#" + strings.Repeat(" ", width-1)}
	group := []string{names}
	sub := []string{units + strings.Repeat(" ", width-len(units))}
	for _, p := range []string{"out-of-place", "in-place"} {
		var groups, subs []string
		for _, g := range compareGroups {
			cols := make([]string, len(g.sub))
			for j, name := range g.sub {
				cols[j] = fmt.Sprintf("%*s", g.widths[j], name)
			}
			c := strings.Join(cols, " ")
			subs = append(subs, c)
			groups = append(groups, center(g.label, len(c), ' '))
		}
		s := strings.Join(subs, "  ")
		sub = append(sub, s)
		group = append(group, strings.Join(groups, "  "))
		place = append(place, center(p, len(s), '-'))
	}
	lines := []string{strings.Join(place, "  "), strings.Join(group, "  "), strings.Join(sub, "  ")}
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}()

// center centers label, with a space on each side, in width characters of fill.
func center(label string, width int, fill byte) string {
	pad := width - len(label) - 2
	if pad < 0 {
		return label
	}
	left := pad / 2
	return strings.Repeat(string(fill), left) + " " + label + " " + strings.Repeat(string(fill), pad-left)
}

// avgBusBW is the mean busbw over every row, both placements, as nccl-tests averages it.
func avgBusBW(rows []row) float64 {
	if len(rows) == 0 {
		return 0
	}
	var s float64
	for _, r := range rows {
		s += r.BusBW
	}
	return s / float64(len(rows))
}

// jsonNote explains the rows of --json.
const jsonNote = "impl: mscclpp = this library's collectives, nccl = NCCL in the same process (same buffers and stream); " +
	"time_us: per call, max over ranks; size: bytes (AllGather: received per rank; ReduceScatter: sent per rank; " +
	"AlltoAll: sent per rank, size/ranks to each; SendRecv: sent to the next rank); algbw, busbw: GB/s; " +
	"wrong: summed over ranks, -1 when not checked; graph: CUDA graph launches timed, 0 for direct calls"

// summaryLines are the lines after the table: wrong results (with -c 1) and the average bus
// bandwidth, per implementation and with the mean time ratio under --compare-nccl.
func summaryLines(o *options, rows []row) []string {
	var lines []string
	if o.check {
		var total int64
		var per []string
		for _, impl := range o.impls {
			var n int64
			for _, r := range rowsOf(rows, impl) {
				n += max(r.Wrong, 0)
			}
			total += n
			per = append(per, fmt.Sprintf("%s %d", impl, n))
		}
		status := "OK"
		if total != 0 {
			status = "FAILED"
		}
		l := fmt.Sprintf("# Errors with wrong results: %d %s", total, status)
		if o.compare() {
			l += " (" + strings.Join(per, ", ") + ")"
		}
		lines = append(lines, l)
	}
	if !o.compare() {
		return append(lines, fmt.Sprintf("# Avg bus bandwidth    : %g ", avgBusBW(rows)))
	}
	for _, impl := range o.impls {
		lines = append(lines, fmt.Sprintf("# Avg bus bandwidth %-9s: %g ", "("+impl+")", avgBusBW(rowsOf(rows, impl))))
	}
	all, n := meanRatio(rows, nil)
	out, _ := meanRatio(rows, new(false))
	in, _ := meanRatio(rows, new(true))
	return append(lines, fmt.Sprintf("# Time ratio mscclpp/nccl: geometric mean %.3f over %d sizes x placements (out-of-place %.3f, in-place %.3f)",
		all, n, out, in))
}

// rowsOf returns the rows of one implementation.
func rowsOf(rows []row, impl string) []row {
	var out []row
	for _, r := range rows {
		if r.Impl == impl {
			out = append(out, r)
		}
	}
	return out
}

// meanRatio is the geometric mean of mscclpp's time over NCCL's, over the (size, placement)
// pairs both measured with a positive time; inPlace, when not nil, keeps one placement. n is the
// number of pairs; the mean is 0 when there are none.
func meanRatio(rows []row, inPlace *bool) (mean float64, n int) {
	type key struct {
		size    int64
		inPlace bool
	}
	nccl := map[key]float64{}
	for _, r := range rowsOf(rows, implNCCL) {
		nccl[key{r.Size, r.InPlace}] = r.TimeUs
	}
	var logSum float64
	for _, r := range rowsOf(rows, implMscclpp) {
		if inPlace != nil && r.InPlace != *inPlace {
			continue
		}
		if t := nccl[key{r.Size, r.InPlace}]; t > 0 && r.TimeUs > 0 {
			logSum += math.Log(r.TimeUs / t)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return math.Exp(logSum / float64(n)), n
}

// algoText says how the library picks its algorithms: the MSCCLPP_*_ALGO variables among vars
// that the environment (lookup) sets, with the value in effect, or that none is set.
func algoText(lookup func(string) (string, bool), vars ...*config.Var[string]) string {
	var set, names []string
	for _, v := range vars {
		names = append(names, v.Name)
		raw, ok := lookup(v.Name)
		if !ok || strings.TrimSpace(raw) == "" {
			continue
		}
		eff := v.Get()
		if strings.ToLower(strings.TrimSpace(raw)) == eff {
			set = append(set, v.Name+"="+eff)
		} else {
			set = append(set, fmt.Sprintf("%s=%q ignored (malformed), %s in effect", v.Name, raw, eff))
		}
	}
	if len(set) == 0 {
		return "algorithms chosen by size and rank count (" + strings.Join(names, ", ") + " unset)"
	}
	return "algorithm selection " + strings.Join(set, ", ")
}

// headerLines are the lines before the table: what is measured, how, and on which devices.
func (b *bench) headerLines(devLines []string) []string {
	o := b.o
	lines := []string{"# mscclpp-bench: collective benchmark of MSCCL++ in Go (nccl-tests style)"}
	if o.uses(implMscclpp) {
		buffers := "buffers unregistered"
		if o.register {
			buffers = "buffers registered (-R 1: zero-copy for large messages)"
		}
		lines = append(lines, "# mscclpp: this library's collectives (package collectives), "+
			algoText(os.LookupEnv, config.AllReduceAlgo, config.AllGatherAlgo, config.BroadcastAlgo)+", "+buffers)
	}
	if o.uses(implNCCL) {
		lines = append(lines, fmt.Sprintf("# nccl: NCCL %s (%s) in the same process, NCCL_NVLS_ENABLE=%s",
			versionString(b.ncclVersion), nccl.path, os.Getenv("NCCL_NVLS_ENABLE")))
	}
	if o.compare() {
		lines = append(lines, "# both run on the same buffers and stream, mscclpp first; ratio = mscclpp time / nccl time (below 1: mscclpp is faster)")
	}
	lines = append(lines, fmt.Sprintf("# collective %s  nranks %d  minBytes %d  maxBytes %d  step: %d(factor)  warmup iters: %d  iters: %d  validation: %d  graph: %d",
		o.collective, b.nranks, o.minBytes, o.maxBytes, o.factor, o.warmup, o.iters, map[bool]int{true: 1}[o.check], o.graph))
	if o.graph == 0 {
		lines = append(lines, "# time: wall clock around the timed iterations' enqueues + stream synchronize, per iteration, max over ranks")
	} else {
		lines = append(lines, fmt.Sprintf("# time: wall clock around %d launches of a CUDA graph of %d captured calls + stream synchronize, per call, max over ranks",
			o.graph, o.iters))
	}
	lines = append(lines, planLines(o, b.nranks)...)
	lines = append(lines, "#", "# Using devices")
	lines = append(lines, devLines...)
	lines = append(lines, "#")
	if o.compare() {
		return append(lines, compareHeader)
	}
	return append(lines, tableHeader)
}

// planLines say, with -c 1, which placements of the measured implementations on nranks ranks are
// not checked, and why (uncheckedWhy).
func planLines(o *options, nranks int) []string {
	if !o.check {
		return nil
	}
	var lines []string
	for _, inPlace := range []bool{false, true} {
		for _, impl := range o.impls {
			if why := uncheckedWhy(o.collective, impl, inPlace, nranks); why != "" {
				lines = append(lines, fmt.Sprintf("# %s %s, %s: %s", placement(inPlace), o.collective, impl, why))
			}
		}
	}
	return lines
}

// jsonReport is what --json writes.
type jsonReport struct {
	Note string `json:"note"`
	Rows []row  `json:"rows"`
}

func writeJSON(w io.Writer, rows []row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{Note: jsonNote, Rows: rows})
}

func readJSON(r io.Reader) ([]row, error) {
	var rep jsonReport
	if err := json.NewDecoder(r).Decode(&rep); err != nil {
		return nil, err
	}
	return rep.Rows, nil
}

func writeJSONFile(path string, rows []row) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeJSON(f, rows); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
