package core

// The benchmark polls a word of page-locked host memory that the engine's value write sets; Go
// reaches it only through unsafe.Pointer, hence this file's name.

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// BenchmarkCopyEngineLatency times the proxy's copy engine alone, from the host's first call to
// the host seeing the signal: the part of a port channel's or a legacy connection's put + signal
// that is neither the kernel's push nor its wait. Each iteration queues what the proxy queues for
// one trigger (an 8-byte copy into GPU memory, then the signal's value write, or the value write
// alone) and spins until the signal word, in page-locked host memory, holds the iteration's value.
// "enqueue-us" is the host time of the driver calls alone. The copy goes from GPU 0 to GPU 1 when
// there are two GPUs (the legacy benchmark's path), else within GPU 0. Needs a GPU.
func BenchmarkCopyEngineLatency(b *testing.B) {
	n, err := cuda.DeviceCount()
	if err != nil || n == 0 {
		b.Skipf("no GPU: %v", err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	devs := []int{0, min(1, n-1)}
	var ctxs []cuda.Context
	var bufs []cuda.DevicePtr
	for _, ordinal := range devs {
		dev, err := cuda.GetDevice(ordinal)
		if err != nil {
			b.Fatal(err)
		}
		ctx, err := dev.RetainPrimaryContext()
		if err != nil {
			b.Fatal(err)
		}
		defer ctx.Release()
		if err := ctx.SetCurrent(); err != nil {
			b.Fatal(err)
		}
		buf, err := cuda.MemAlloc(1 << 20)
		if err != nil {
			b.Fatal(err)
		}
		defer cuda.MemFree(buf)
		ctxs, bufs = append(ctxs, ctx), append(bufs, buf)
	}
	if err := ctxs[0].SetCurrent(); err != nil {
		b.Fatal(err)
	}
	if devs[1] != devs[0] {
		if err := ctxs[1].EnablePeerAccess(); err != nil { // as the legacy connections' IPC mappings do
			b.Fatal(err)
		}
	}
	flag, err := cuda.MemHostAlloc(8)
	if err != nil {
		b.Fatal(err)
	}
	defer cuda.MemFreeHost(flag)
	flagDev, err := cuda.MemHostGetDevicePointer(flag)
	if err != nil {
		b.Fatal(err)
	}
	e, err := newCopyEngine(bufs[0]+(1<<20)-8, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := e.close(); err != nil {
			b.Error(err)
		}
	}()
	word := (*uint64)(flag)
	for _, tc := range []struct {
		name string
		put  bool
	}{{"signal", false}, {"put8+signal", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var enqueue time.Duration
			value := atomic.LoadUint64(word)
			for range b.N {
				value++
				start := time.Now()
				if tc.put {
					if err := e.Copy(uint64(bufs[1]), uint64(bufs[0]), 8); err != nil {
						b.Fatal(err)
					}
				}
				if err := e.WriteValue(uint64(flagDev), value); err != nil {
					b.Fatal(err)
				}
				enqueue += time.Since(start)
				for atomic.LoadUint64(word) != value {
				}
			}
			b.ReportMetric(float64(enqueue.Microseconds())/float64(b.N), "enqueue-us")
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "us/op")
		})
	}
}
