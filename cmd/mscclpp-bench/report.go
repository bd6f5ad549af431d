package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// row is one measurement: one implementation, collective, size and placement.
type row struct {
	Impl       string  `json:"impl"` // "nccl" today; "mscclpp" once the library has collectives
	Collective string  `json:"collective"`
	Datatype   string  `json:"datatype"`
	Op         string  `json:"op"` // "none" for AllGather
	Ranks      int     `json:"ranks"`
	Size       int64   `json:"size"`  // bytes; for AllGather the total each rank receives
	Count      int64   `json:"count"` // elements, size / element size
	TimeUs     float64 `json:"time_us"`
	AlgBW      float64 `json:"algbw"` // GB/s (1e9 bytes per second)
	BusBW      float64 `json:"busbw"` // GB/s
	Wrong      int64   `json:"wrong"` // -1 when not checked
	InPlace    bool    `json:"in_place"`
}

// busFactor is busbw/algbw for a collective over n ranks, as nccl-tests defines it.
func busFactor(collective string, n int) float64 {
	if n <= 0 {
		return 0
	}
	switch collective {
	case "allreduce":
		return 2 * float64(n-1) / float64(n)
	case "allgather":
		return float64(n-1) / float64(n)
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

func wrongText(w int64) string {
	if w < 0 {
		return fmt.Sprintf("%5s", "N/A")
	}
	return fmt.Sprintf("%5d", w)
}

// formatRow is one size's line: out-of-place then in-place, in nccl-tests' columns.
func formatRow(out, in row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%12d  %12d  %8s  %6s  %6d", out.Size, out.Count, out.Datatype, out.Op, -1)
	for _, r := range []row{out, in} {
		fmt.Fprintf(&b, "  %7s  %6.2f  %6.2f  %s", timeText(r.TimeUs), r.AlgBW, r.BusBW, wrongText(r.Wrong))
	}
	return b.String()
}

// tableHeader is the column header, as nccl-tests prints it.
const tableHeader = `#                                                              out-of-place                       in-place          
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       `

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

// jsonReport is what --json writes.
type jsonReport struct {
	Note string `json:"note"`
	Rows []row  `json:"rows"`
}

func writeJSON(w io.Writer, rows []row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{Note: notImplementedLine, Rows: rows})
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
