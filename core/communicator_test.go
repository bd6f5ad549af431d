package core

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestCommunicatorTag(t *testing.T) {
	tests := []struct {
		kind msgKind
		tag  int
		want int
	}{
		{kindEndpoint, 0, communicatorTagBase},
		{kindEndpoint, 5, communicatorTagBase + 5},
		{kindStub, 0, communicatorTagBase + 1<<24},
		{kindMemory, 0, communicatorTagBase + 2<<24},
		{kindMemory, MaxUserTag - 1, communicatorTagBase + 3<<24 - 1},
	}
	for _, tc := range tests {
		got, err := communicatorTag(tc.kind, tc.tag)
		require.NoError(t, err, "%v %d", tc.kind, tc.tag)
		assert.Equal(t, tc.want, got, "%v %d", tc.kind, tc.tag)
	}
	for _, tag := range []int{-1, MaxUserTag, 1 << 40} {
		_, err := communicatorTag(kindEndpoint, tag)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, "tag %d", tag)
	}
	_, err := communicatorTag(numKinds, 0)
	assert.ErrorIs(t, err, errs.ErrInternal)

	// Above every legacy tag in practice (2^28 setups or registrations), and within int32.
	assert.Greater(t, communicatorTagBase, LegacyRegisterTagBase+1<<28-1)
	last, _ := communicatorTag(numKinds-1, MaxUserTag-1)
	assert.Less(t, last, 1<<31)
}

func TestEnvelope(t *testing.T) {
	msg, err := decodeEnvelope(encodeEnvelope([]byte("payload"), nil))
	require.NoError(t, err)
	assert.Equal(t, []byte("payload"), msg)

	_, err = decodeEnvelope(encodeEnvelope(nil, fmt.Errorf("GPU 3 is gone")))
	assert.ErrorIs(t, err, ErrPeerFailed)
	assert.ErrorIs(t, err, errs.ErrRemote)
	assert.ErrorContains(t, err, "GPU 3 is gone")

	long := make([]byte, 10*maxFailureBytes)
	assert.Len(t, encodeEnvelope(nil, fmt.Errorf("%s", long)), 1+maxFailureBytes)

	for _, b := range [][]byte{nil, {0}, {9, 1}} {
		_, err := decodeEnvelope(b)
		assert.ErrorIs(t, err, errs.ErrRemote)
	}
}

func TestCommunicatorRefusesBadArguments(t *testing.T) {
	comms := bootCommunicators(t, 1)
	c := comms[0]
	for _, f := range []Future[*Connection]{
		c.Connect(EndpointConfig{}, 1, 0),
		c.Connect(EndpointConfig{}, -1, 0),
		c.Connect(EndpointConfig{}, 0, -1),
		c.Connect(EndpointConfig{}, 0, MaxUserTag),
	} {
		require.True(t, f.Ready(), "refused at once")
		_, err := f.Get(t.Context())
		assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	}
	assert.NotNil(t, c.Bootstrap())
	assert.NotNil(t, c.Context())
}

// bootCommunicators starts a job of n ranks in this process, each with a communicator over its
// own context; everything is closed when the test ends.
func bootCommunicators(t *testing.T, n int) []*Communicator {
	t.Helper()
	opts := bootstrap.Options{Timeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler)}
	root, err := bootstrap.NewRoot(opts)
	require.NoError(t, err)
	t.Cleanup(func() { root.Close() })
	comms := make([]*Communicator, n)
	errList := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() {
			var b *bootstrap.TCP
			b, errList[r] = bootstrap.Join(t.Context(), root.ID(), r, n, opts)
			if b != nil {
				comms[r] = NewCommunicator(b, NewContext())
			}
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range comms {
			if c != nil {
				c.Bootstrap().Close()
				c.Context().Close()
			}
		}
	})
	for r, err := range errList {
		require.NoError(t, err, "rank %d", r)
	}
	return comms
}

// onEveryRank runs f on every rank, one goroutine each, and waits for them. f must not stop the
// test (assert, not require).
func onEveryRank(comms []*Communicator, f func(c *Communicator, rank int)) {
	var wg sync.WaitGroup
	for r, c := range comms {
		wg.Go(func() { f(c, r) })
	}
	wg.Wait()
}

// getQuickly collects a future well before the bootstrap timeout.
func getQuickly[T any](t *testing.T, f Future[T]) (T, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	v, err := f.Get(ctx)
	assert.NotErrorIs(t, err, ErrWaitCanceled, "the exchange hung")
	return v, err
}

// TestCommunicatorExchanges runs the Communicator's exchanges between three ranks of this
// process, all pairs and each rank with itself, as far as a machine without a GPU allows.
func TestCommunicatorExchanges(t *testing.T) {
	const n = 3
	comms := bootCommunicators(t, n)
	gpuCfg := EndpointConfig{Transport: TransportP2P, Device: gpu0}
	cpuCfg := EndpointConfig{Transport: TransportP2P, Device: Device{Type: DeviceCPU}}

	t.Run("GPU endpoints fail at the driver on both sides", func(t *testing.T) {
		requireNoGPU(t)
		onEveryRank(comms, func(c *Communicator, rank int) {
			var futures []Future[*Connection]
			for peer := range n {
				futures = append(futures, c.Connect(gpuCfg, peer, 1))
			}
			for peer, f := range futures {
				_, err := getQuickly(t, f)
				assertNoGPUError(t, err)
				assert.ErrorContains(t, err, fmt.Sprintf("(rank %d, peer %d)", rank, peer))
			}
		})
	})

	t.Run("endpoints are exchanged, then CPU endpoints are refused", func(t *testing.T) {
		onEveryRank(comms, func(c *Communicator, rank int) {
			var futures []Future[*Connection]
			for peer := range n {
				futures = append(futures, c.Connect(cpuCfg, peer, 2))
			}
			for _, f := range futures {
				_, err := getQuickly(t, f)
				assert.ErrorIs(t, err, errs.ErrInvalidArgument)
				assert.ErrorContains(t, err, "GPU endpoints only", "the peer's endpoint arrived")
			}
		})
	})

	t.Run("a local failure reaches the peer", func(t *testing.T) {
		onEveryRank(comms[:2], func(c *Communicator, rank int) {
			cfg := cpuCfg
			if rank == 0 {
				cfg = EndpointConfig{Transport: 7, Device: gpu0}
			}
			_, err := getQuickly(t, c.Connect(cfg, 1-rank, 3))
			if rank == 0 {
				assert.ErrorIs(t, err, errs.ErrInvalidArgument)
			} else {
				assert.ErrorIs(t, err, ErrPeerFailed)
				assert.ErrorContains(t, err, "unknown transport 7")
			}
		})
		// The pair stays in step: the next exchange on the same tag pairs correctly.
		onEveryRank(comms[:2], func(c *Communicator, rank int) {
			_, err := getQuickly(t, c.Connect(cpuCfg, 1-rank, 3))
			assert.ErrorContains(t, err, "GPU endpoints only")
		})
	})

	t.Run("semaphores without a connection fail on both sides", func(t *testing.T) {
		onEveryRank(comms[:2], func(c *Communicator, rank int) {
			_, err := getQuickly(t, c.BuildSemaphore(nil, 1-rank, 0))
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	})

	t.Run("memory of this process arrives in order", func(t *testing.T) {
		const perPeer = 20
		onEveryRank(comms, func(c *Communicator, rank int) {
			var sends []Future[struct{}]
			for peer := range n {
				for i := range perPeer {
					addr := uint64(0x7f0000000000 + rank<<20 + peer<<12 + i*64)
					sends = append(sends, c.SendMemory(testMemory(thisProcess(), addr, uint64(i+1)), peer, 9))
				}
			}
			var recvs []Future[RegisteredMemory]
			for peer := range n {
				for range perPeer {
					recvs = append(recvs, c.RecvMemory(peer, 9))
				}
			}
			for _, f := range sends {
				_, err := getQuickly(t, f)
				assert.NoError(t, err)
			}
			for k, f := range recvs {
				peer, i := k/perPeer, k%perPeer
				m, err := getQuickly(t, f)
				if assert.NoError(t, err) {
					assert.Equal(t, uint64(0x7f0000000000+peer<<20+rank<<12+i*64), uint64(m.Data()), "from rank %d, number %d", peer, i)
					assert.Equal(t, uint64(i+1), m.Size())
				}
			}
		})
	})

	t.Run("memory of another process is mapped with the driver", func(t *testing.T) {
		requireNoGPU(t)
		onEveryRank(comms[:2], func(c *Communicator, rank int) {
			send := c.SendMemory(testMemory(otherProcess(), 0x2000, 64), 1-rank, 10)
			_, err := getQuickly(t, c.RecvMemory(1-rank, 10))
			assertNoGPUError(t, err)
			_, err = getQuickly(t, send)
			assert.NoError(t, err)
		})
	})

	t.Run("the zero memory is refused on both sides", func(t *testing.T) {
		onEveryRank(comms[:2], func(c *Communicator, rank int) {
			send := c.SendMemory(RegisteredMemory{}, 1-rank, 11)
			_, err := getQuickly(t, c.RecvMemory(1-rank, 11))
			assert.ErrorIs(t, err, ErrPeerFailed)
			_, err = getQuickly(t, send)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument)
		})
	})
}

func TestCommunicatorClosedBootstrap(t *testing.T) {
	comms := bootCommunicators(t, 2)
	comms[0].Bootstrap().Close()
	_, err := getQuickly(t, comms[0].Connect(EndpointConfig{Device: Device{Type: DeviceCPU}}, 1, 0))
	assert.ErrorIs(t, err, bootstrap.ErrClosed)
	_, err = getQuickly(t, comms[0].RecvMemory(1, 0))
	assert.ErrorIs(t, err, bootstrap.ErrClosed)
}
