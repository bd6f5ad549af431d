package main

import (
	"fmt"
	"image/color"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// writePlot writes one PNG with two panels: bus bandwidth against size (log x) and latency
// against size (log-log), one line per implementation and placement: a color per implementation,
// solid for out-of-place and dashed for in-place.
func writePlot(path string, rows []row) error {
	if len(rows) == 0 {
		return fmt.Errorf("plot %s: no rows", path)
	}
	r0 := rows[0]
	mode := "direct calls"
	if r0.Graph > 0 {
		mode = fmt.Sprintf("CUDA graph, %d launches", r0.Graph)
	}
	title := fmt.Sprintf("%s %s %s, %d ranks, %s", r0.Collective, r0.Datatype, r0.Op, r0.Ranks, mode)

	bw := plot.New()
	bw.Title.Text = "bus bandwidth: " + title
	bw.X.Label.Text = "size (bytes)"
	bw.Y.Label.Text = "busbw (GB/s)"
	bw.X.Scale = plot.LogScale{}
	bw.X.Tick.Marker = plot.LogTicks{Prec: -1}

	lat := plot.New()
	lat.Title.Text = "latency"
	lat.X.Label.Text = "size (bytes)"
	lat.Y.Label.Text = "time (us)"
	lat.X.Scale = plot.LogScale{}
	lat.X.Tick.Marker = plot.LogTicks{Prec: -1}
	lat.Y.Scale = plot.LogScale{}
	lat.Y.Tick.Marker = plot.LogTicks{Prec: -1}

	colors := map[string]color.Color{
		implMscclpp: color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
		implNCCL:    color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	}
	var impls []string // in the order of the rows
	for _, r := range rows {
		if !slices.Contains(impls, r.Impl) {
			impls = append(impls, r.Impl)
		}
	}
	for _, impl := range impls {
		c, ok := colors[impl]
		if !ok {
			c = color.Black
		}
		for _, inPlace := range []bool{false, true} {
			var bwPts, latPts plotter.XYs
			for _, r := range rows {
				if r.Impl != impl || r.InPlace != inPlace || r.Size <= 0 {
					continue
				}
				bwPts = append(bwPts, plotter.XY{X: float64(r.Size), Y: r.BusBW})
				if r.TimeUs > 0 {
					latPts = append(latPts, plotter.XY{X: float64(r.Size), Y: r.TimeUs})
				}
			}
			name := impl + " " + placement(inPlace)
			for _, p := range []struct {
				plt *plot.Plot
				pts plotter.XYs
			}{{bw, bwPts}, {lat, latPts}} {
				if len(p.pts) == 0 {
					continue
				}
				l, s, err := plotter.NewLinePoints(p.pts)
				if err != nil {
					return fmt.Errorf("plot %s: %w", path, err)
				}
				l.Color, s.Color = c, c
				if inPlace {
					l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
					s.Shape = draw.BoxGlyph{}
				}
				p.plt.Add(l, s)
				p.plt.Legend.Add(name, l, s)
			}
		}
	}
	bw.Legend.Top, bw.Legend.Left = true, true
	lat.Legend.Top, lat.Legend.Left = true, true

	img := vgimg.New(vg.Points(1200), vg.Points(450))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Points(20), PadY: vg.Points(10),
		PadLeft: vg.Points(10), PadRight: vg.Points(10), PadTop: vg.Points(10), PadBottom: vg.Points(10)}
	canvases := plot.Align([][]*plot.Plot{{bw, lat}}, tiles, dc)
	bw.Draw(canvases[0][0])
	lat.Draw(canvases[0][1])

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return f.Close()
}
