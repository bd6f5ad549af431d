package bootstrap

import (
	"context"
	"fmt"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// beginCollective records op as this rank's collective call in progress and returns the func
// that ends it, or fails with ErrCollectiveInProgress naming the call already in progress.
func (b *TCP) beginCollective(op string) (end func(), err error) {
	b.collMu.Lock()
	defer b.collMu.Unlock()
	if b.collOp != "" {
		return nil, fmt.Errorf("%w: bootstrap %s in progress on this rank (collective calls on one bootstrap must not overlap)",
			ErrCollectiveInProgress, b.collOp)
	}
	b.collOp = op
	return func() {
		b.collMu.Lock()
		b.collOp = ""
		b.collMu.Unlock()
	}, nil
}

// AllGather gathers bytesPerRank bytes from every rank: on entry buf[r*bytesPerRank:(r+1)*bytesPerRank]
// holds this rank's data for r = Rank(), and on return that range holds rank r's data for every r.
// len(buf) must be at least Size()*bytesPerRank, and bytesPerRank at most MaxMessageBytes. It
// runs a ring: Size()-1 steps in each of which every rank sends one block to its successor and
// receives one from its predecessor. It must not overlap another AllGather or Barrier on b: such
// a call fails with ErrCollectiveInProgress.
func (b *TCP) AllGather(ctx context.Context, buf []byte, bytesPerRank int) error {
	if b.closed.Load() {
		return b.opError("all-gather", errs.NoRank, ErrClosed)
	}
	switch {
	case bytesPerRank < 0 || bytesPerRank > maxFrameBytes:
		return b.opError("all-gather", errs.NoRank, fmt.Errorf("%w: %d bytes per rank, want 0 to %d", errBadSize, bytesPerRank, maxFrameBytes))
	case len(buf)/b.nranks < bytesPerRank:
		return b.opError("all-gather", errs.NoRank, fmt.Errorf("%w: buffer of %d bytes is too small for %d ranks of %d bytes",
			errBadSize, len(buf), b.nranks, bytesPerRank))
	}
	end, err := b.beginCollective("all-gather")
	if err != nil {
		return b.opError("all-gather", errs.NoRank, err)
	}
	defer end()
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	if err := b.allGather(ctx, buf, bytesPerRank, tagAllGather); err != nil {
		return b.opError("all-gather", errs.NoRank, err)
	}
	return nil
}

// Barrier returns once every rank has called it: it is a ring all-gather of zero bytes, whose
// last message to each rank depends on every other rank having entered. Like AllGather, it must
// not overlap another collective call on b.
func (b *TCP) Barrier(ctx context.Context) error {
	if b.closed.Load() {
		return b.opError("barrier", errs.NoRank, ErrClosed)
	}
	end, err := b.beginCollective("barrier")
	if err != nil {
		return b.opError("barrier", errs.NoRank, err)
	}
	defer end()
	ctx, cancel := b.opContext(ctx)
	defer cancel()
	if err := b.allGather(ctx, nil, 0, tagBarrier); err != nil {
		return b.opError("barrier", errs.NoRank, err)
	}
	return nil
}

// allGather is the ring all-gather of AllGather on the given tag. In step s, rank r sends the
// block of rank r-s to r+1 and receives the block of rank r-s-1 from r-1 (mod nranks).
func (b *TCP) allGather(ctx context.Context, buf []byte, k int, tag int) error {
	n, r := b.nranks, b.rank
	next, prev := (r+1)%n, (r+n-1)%n
	block := func(i int) []byte { return buf[i*k : (i+1)*k] }
	for s := 0; s < n-1; s++ {
		sendIdx := (r - s + n) % n
		recvIdx := (r - s - 1 + 2*n) % n
		if err := b.send(ctx, next, tag, block(sendIdx)); err != nil {
			return fmt.Errorf("step %d: send to rank %d: %w", s, next, err)
		}
		if err := b.recvInto(ctx, prev, tag, block(recvIdx)); err != nil {
			return fmt.Errorf("step %d: receive from rank %d: %w", s, prev, err)
		}
	}
	return nil
}
