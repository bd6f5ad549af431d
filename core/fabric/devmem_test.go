package fabric

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/cuda/cudatest"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// checkDeviceMemory (TestHMEM) checks that an endpoint opens for device memory (FI_HMEM)
// exactly where the provider offers it (plain.HMEM), that the refusal names it, that plain,
// opened without it, refuses GPU memory, and that host memory moves as before on an endpoint
// opened with it.
func checkDeviceMemory(t *testing.T, plain *Endpoint, provider string) {
	t.Helper()
	assert.False(t, plain.DeviceMemory())
	_, err := plain.RegisterCUDA(1<<20, 4096, 0) // refused before the provider sees it
	assert.ErrorIs(t, err, ErrUnavailable)
	e, err := OpenDeviceMemory(provider, "")
	if !plain.HMEM() {
		assert.ErrorIs(t, err, ErrUnavailable)
		assert.ErrorContains(t, err, "device memory (FI_HMEM)")
		return
	}
	require.NoError(t, err)
	assert.True(t, e.DeviceMemory())
	require.NoError(t, e.Close())

	const n = 1 << 20
	a, b, ab, _ := pairWith(t, OpenDeviceMemory, provider, "")
	src, dst := testutil.HostMemory(t, n), testutil.HostMemory(t, n)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	srcReg, err := a.Register(addr(src), n)
	require.NoError(t, err)
	defer srcReg.Deregister()
	dstReg, err := b.Register(addr(dst), n)
	require.NoError(t, err)
	defer dstReg.Deregister()
	var came atomic.Uint64
	require.NoError(t, b.SetDataHandler(func(d uint64) { came.Store(d) }))
	progressInBackground(t, b)
	require.NoError(t, a.WriteData(ab, srcReg, 0, dstReg.Remote(), 0, n, 7))
	require.NoError(t, a.Flush(context.Background()))
	deadline := time.Now().Add(30 * time.Second)
	for came.Load() != 7 {
		require.False(t, time.Now().After(deadline), "the write's data never came")
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, src, dst)
}

// TestRegisterCUDA runs this test binary again as its writer (testutil.StartRanks, the job's id
// the reader's endpoint address), which writes from its GPU memory into the reader's GPU memory
// this variable names (the region's address, size and key, comma-separated).
const devMemRegionVar = "MSCCLPP_TEST_DEVMEM_REGION"

// devMemPattern is byte i of what TestRegisterCUDA's writer sends.
func devMemPattern(i int) byte { return byte(i*11 + i/4096) }

// TestRegisterCUDA (GPU hosts whose shm offers FI_HMEM): this process registers GPU memory with
// a shm endpoint opened for device memory; a second process, its peer, writes 4 MiB + 3 bytes
// from its own GPU memory into it with remote CQ data, as a rank on another host would over a
// network provider with FI_HMEM; when the data comes, every byte is in place. No host memory
// stages the bytes at either end.
func TestRegisterCUDA(t *testing.T) {
	if _, _, peerAddr, ok := testutil.ProcessRank(); ok {
		writeDeviceMemoryAsPeer(t, peerAddr)
		return
	}
	const n = 4<<20 + 3
	gpu := cudatest.PrimaryContext(t, 0)
	if !Has("shm") {
		t.Skip("libfabric offers no shm provider here")
	}
	e, err := OpenDeviceMemory("shm", "")
	if err != nil {
		t.Skipf("shm does not register GPU memory here: %v", err)
	}
	defer e.Close()
	var dst cuda.DevicePtr
	require.NoError(t, gpu.Do(func() (err error) {
		if dst, err = cuda.MemAlloc(n); err == nil {
			err = cuda.MemsetD8Async(dst, 0, n, cuda.Stream{})
		}
		if err == nil {
			err = cuda.Stream{}.Synchronize()
		}
		return err
	}))
	defer gpu.Do(func() error { return cuda.MemFree(dst) })
	reg, err := e.RegisterCUDA(uint64(dst), n, int(gpu.Device()))
	require.NoError(t, err)
	defer reg.Deregister()
	var came atomic.Uint64
	require.NoError(t, e.SetDataHandler(func(d uint64) { came.Store(d) }))
	progressInBackground(t, e)
	me, err := e.Address()
	require.NoError(t, err)

	var out bytes.Buffer
	writer := testutil.StartRanks(t, context.Background(), "^TestRegisterCUDA$", 1, me, func(_ int, cmd *exec.Cmd) {
		cmd.Args = append(cmd.Args, "-test.v")
		cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d,%d,%d", devMemRegionVar, reg.Addr, reg.Size, reg.Key))
		cmd.Stdout, cmd.Stderr = &out, &out
	})[0]
	require.NoError(t, writer.Wait(), "the writer's process:\n%s", out.String())
	require.Contains(t, out.String(), "--- PASS", "the writer's process ran no test:\n%s", out.String())
	deadline := time.Now().Add(30 * time.Second)
	for came.Load() != 42 {
		require.False(t, time.Now().After(deadline), "the write's data never came")
		time.Sleep(time.Millisecond)
	}
	got := make([]byte, n)
	require.NoError(t, gpu.Do(func() error {
		if err := cuda.MemcpyAsync(cuda.DevicePtr(uintptr(unsafe.Pointer(&got[0]))), dst, n, cuda.Stream{}); err != nil {
			return err
		}
		return cuda.Stream{}.Synchronize()
	}))
	wrong := 0
	for i, v := range got {
		if v != devMemPattern(i) {
			wrong++
		}
	}
	assert.Zero(t, wrong, "bytes of %d wrong", n)
}

// writeDeviceMemoryAsPeer is TestRegisterCUDA's second process: the reader's endpoint is at
// peerAddr.
func writeDeviceMemoryAsPeer(t *testing.T, peerAddr []byte) {
	parts := strings.Split(os.Getenv(devMemRegionVar), ",")
	require.Len(t, parts, 3)
	var remote Remote
	for i, p := range []*uint64{&remote.Addr, &remote.Size, &remote.Key} {
		var err error
		*p, err = strconv.ParseUint(parts[i], 10, 64)
		require.NoError(t, err)
	}
	n := int(remote.Size)
	gpu := cudatest.PrimaryContext(t, 0)
	e, err := OpenDeviceMemory("shm", "")
	require.NoError(t, err)
	defer e.Close()
	peer, err := e.AddPeer(peerAddr)
	require.NoError(t, err)
	pattern := make([]byte, n)
	for i := range pattern {
		pattern[i] = devMemPattern(i)
	}
	var src cuda.DevicePtr
	require.NoError(t, gpu.Do(func() (err error) {
		if src, err = cuda.MemAlloc(n); err == nil {
			err = cuda.MemcpyAsync(src, cuda.DevicePtr(uintptr(unsafe.Pointer(&pattern[0]))), n, cuda.Stream{})
		}
		if err == nil {
			err = cuda.Stream{}.Synchronize()
		}
		return err
	}))
	defer gpu.Do(func() error { return cuda.MemFree(src) })
	reg, err := e.RegisterCUDA(uint64(src), uint64(n), int(gpu.Device()))
	require.NoError(t, err)
	defer reg.Deregister()
	require.NoError(t, e.WriteData(peer, reg, 0, remote, 0, uint64(n), 42))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.Flush(ctx))
}
