package core

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

func TestFutureGetTwice(t *testing.T) {
	f := goFuture(func() (int, error) { return 42, nil })
	for range 2 {
		v, err := f.Get(t.Context())
		require.NoError(t, err)
		assert.Equal(t, 42, v)
	}
	assert.True(t, f.Ready())

	boom := errors.New("boom")
	g := goFuture(func() (*int, error) { return nil, boom })
	_, err1 := g.Get(t.Context())
	_, err2 := g.Get(t.Context())
	assert.Same(t, boom, err1, "the operation's error as is")
	assert.Same(t, err1, err2)

	failed := failedFuture[string](boom)
	assert.True(t, failed.Ready())
	_, err := failed.Get(t.Context())
	assert.Same(t, boom, err)
}

func TestFutureConcurrentGet(t *testing.T) {
	release := make(chan struct{})
	f := goFuture(func() (string, error) { <-release; return "done", nil })
	assert.False(t, f.Ready())
	const getters = 16
	got := make([]string, getters)
	var wg sync.WaitGroup
	for i := range getters {
		wg.Go(func() {
			v, err := f.Get(context.Background())
			assert.NoError(t, err)
			got[i] = v
		})
	}
	close(release)
	wg.Wait()
	for _, v := range got {
		assert.Equal(t, "done", v)
	}
}

func TestFutureGetDeadline(t *testing.T) {
	release := make(chan struct{})
	f := goFuture(func() (int, error) { <-release; return 7, nil })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, err := f.Get(ctx)
	assert.ErrorIs(t, err, ErrWaitCanceled)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, errs.ErrSystem)

	canceled, cancel2 := context.WithCancel(t.Context())
	cancel2()
	_, err = f.Get(canceled)
	assert.ErrorIs(t, err, context.Canceled)

	close(release)
	v, err := f.Get(t.Context())
	require.NoError(t, err, "the operation went on; a later Get collects it")
	assert.Equal(t, 7, v)
}

func TestZeroFuture(t *testing.T) {
	var f Future[int]
	_, err := f.Get(t.Context())
	assert.ErrorIs(t, err, errs.ErrInvalidUsage)
	assert.False(t, f.Ready())
}
