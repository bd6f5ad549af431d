package legacy

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

// initComms starts n ranks of one job in this process, over the real bootstrap on loopback.
func initComms(t *testing.T, n int) []*Comm {
	t.Helper()
	root, err := bootstrap.NewRoot(bootstrap.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = root.Close() })
	comms := make([]*Comm, n)
	errList := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { comms[r], errList[r] = InitRankFromID(context.Background(), n, root.ID(), r) })
	}
	wg.Wait()
	for r := range n {
		require.NoError(t, errList[r], "rank %d", r)
	}
	require.NoError(t, root.Wait())
	return comms
}

// TestConnectRefuses: bad connections are refused at Connect with a named error, before any GPU
// is touched.
func TestConnectRefuses(t *testing.T) {
	comms := initComms(t, 2)
	defer func() {
		for _, c := range comms {
			assert.NoError(t, c.Close())
		}
	}()
	c := comms[0]
	buf := cuda.DevicePtr(0x1000)
	tests := []struct {
		name       string
		remoteRank int
		tag        int
		buf        cuda.DevicePtr
		size       uint64
		transport  core.Transport
		device     string
		class      error
		want       string
	}{
		{"self", 0, 0, buf, 8, core.TransportP2P, "", errs.ErrInvalidArgument, "is this rank"},
		{"rank out of range", 2, 0, buf, 8, core.TransportP2P, "", errs.ErrInvalidArgument, "out of range [0, 2)"},
		{"NULL buffer", 1, 0, 0, 8, core.TransportP2P, "", errs.ErrInvalidArgument, "buffer is NULL"},
		{"size 0", 1, 0, buf, 0, core.TransportP2P, "", errs.ErrInvalidArgument, "size is 0"},
		{"negative tag", 1, -1, buf, 8, core.TransportP2P, "", errs.ErrInvalidArgument, "tag -1 is outside [0, 2147483647]"},
		{"tag past int32", 1, 1 << 31, buf, 8, core.TransportP2P, "", errs.ErrInvalidArgument, "tag 2147483648 is outside"},
		{"IB on a missing device", 1, 0, buf, 8, core.TransportIB, "mlx5_9", core.ErrTransportUnavailable, `no RDMA device was found named "mlx5_9"`},
		{"SHM", 1, 0, buf, 8, core.TransportSHM, "", core.ErrTransportUnavailable, "not implemented"},
		{"unknown transport", 1, 0, buf, 8, core.Transport(9), "", errs.ErrInvalidArgument, "unknown transport 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Connect(tc.remoteRank, tc.tag, tc.buf, tc.size, tc.transport, tc.device)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.class)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	// IB records intent like P2P (the setup, which needs a GPU, makes the network connection).
	require.NoError(t, c.Connect(1, 6, buf, 8, core.TransportIB, ""))
	require.NoError(t, c.Connect(1, 5, buf, 8, core.TransportP2P, ""))
	err := c.Connect(1, 5, buf, 8, core.TransportP2P, "")
	assert.ErrorIs(t, err, errs.ErrInvalidUsage, "a second (1, 5) connection")
	_, err = c.DevConns()
	assert.ErrorIs(t, err, ErrNotSetUp)
}

// TestCommKeepsCallersContext: two ranks on GPU 0 in this process go through the whole legacy
// API (connect, set up, device connections, register a buffer, write it, run and stop the
// proxy, close); after every call each rank's thread still has no current context, as it had
// before. Needs a GPU.
func TestCommKeepsCallersContext(t *testing.T) {
	if n, err := cuda.DeviceCount(); err != nil || n == 0 {
		t.Skipf("no GPU: %v", err)
	}
	comms := initComms(t, 2)
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	pctx, err := dev.RetainPrimaryContext()
	require.NoError(t, err)
	defer pctx.Release()
	const size = 1 << 20
	bufs := make([]cuda.DevicePtr, 2)
	require.NoError(t, pctx.Do(func() error {
		for r := range bufs {
			var err error
			if bufs[r], err = cuda.MemAllocZeroed(2*size, cuda.Stream{}); err != nil {
				return err
			}
		}
		return nil
	}))
	defer pctx.Do(func() error {
		for _, b := range bufs {
			_ = cuda.MemFree(b)
		}
		return nil
	})

	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if !assert.NoError(t, cuda.ClearCurrent()) {
				return
			}
			var reg *Registration
			steps := []struct {
				name string
				run  func() error
			}{
				{"Connect", func() error { return c.Connect(1-r, 0, bufs[r], size, core.TransportP2P, "") }},
				{"ConnectionSetup", func() error { return c.ConnectionSetup(context.Background()) }},
				{"DevConns", func() error {
					conns, err := c.DevConns()
					if err == nil && assert.Len(t, conns, 1) {
						assert.Equal(t, uintptr(bufs[1-r]), conns[0].RemoteBuff, "rank %d's remote buffer", r)
					}
					return err
				}},
				{"RegisterBuffer", func() (err error) {
					reg, err = c.RegisterBuffer(context.Background(), bufs[r]+size, size)
					return err
				}},
				{"Registration.Write", func() error { return reg.Write(bufs[r], 64, 0, 0, cuda.Stream{}) }},
				{"ProxyLaunch", c.ProxyLaunch},
				{"ProxyStop", c.ProxyStop},
				{"Close", c.Close},
			}
			for _, s := range steps {
				if !assert.NoError(t, s.run(), "rank %d: %s", r, s.name) {
					return
				}
				cur, err := cuda.CurrentContextHandle()
				assert.NoError(t, err)
				assert.Equal(t, unsafe.Pointer(nil), cur, "rank %d: %s left a context current on the caller's thread", r, s.name)
			}
		})
	}
	wg.Wait()
}
