package collectives

import (
	"context"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/internal/halfprec"
)

// bytesOf encodes values of one type little-endian.
func bytesOf[T int8 | uint8 | int32 | uint32 | int64 | uint64 | float32 | float64](vs ...T) []byte {
	var b []byte
	for _, v := range vs {
		switch x := any(v).(type) {
		case int8:
			b = append(b, byte(x))
		case uint8:
			b = append(b, x)
		case int32:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, x)
		case int64:
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, x)
		case float32:
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
		case float64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
	}
	return b
}

func halves(conv func(float32) uint16, vs ...float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, conv(v))
	}
	return b
}

func TestReduceInto(t *testing.T) {
	tests := []struct {
		name     string
		dt       DataType
		op       Op
		dst, src []byte
		want     []byte
	}{
		{"int8 sum wraps", Int8, Sum, bytesOf[int8](100, -5), bytesOf[int8](100, 3), bytesOf[int8](-56, -2)},
		{"uint8 max", Uint8, Max, bytesOf[uint8](1, 200), bytesOf[uint8](7, 9), bytesOf[uint8](7, 200)},
		{"int32 min", Int32, Min, bytesOf[int32](-1, 5), bytesOf[int32](3, -9), bytesOf[int32](-1, -9)},
		{"uint32 prod wraps", Uint32, Prod, bytesOf[uint32](1<<31, 3), bytesOf[uint32](2, 5), bytesOf[uint32](0, 15)},
		{"int64 avg sums", Int64, Avg, bytesOf[int64](-7, 1<<40), bytesOf[int64](2, 1), bytesOf[int64](-5, 1<<40+1)},
		{"uint64 sum", Uint64, Sum, bytesOf[uint64](math.MaxUint64, 1), bytesOf[uint64](2, 2), bytesOf[uint64](1, 3)},
		{"float32 prod", Float32, Prod, bytesOf[float32](1.5, -2), bytesOf[float32](4, 0.25), bytesOf[float32](6, -0.5)},
		{"float64 max", Float64, Max, bytesOf(1.0, -3.0), bytesOf(0.5, -2.0), bytesOf(1.0, -2.0)},
		{"float16 sum", Float16, Sum, halves(halfprec.ToHalf, 1, 2048), halves(halfprec.ToHalf, 0.5, 1), halves(halfprec.ToHalf, 1.5, 2048)},
		{"bfloat16 min", BFloat16, Min, halves(halfprec.ToBfloat, 1, -4), halves(halfprec.ToBfloat, 2, -8), halves(halfprec.ToBfloat, 1, -8)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, reduceInto(tc.dt, tc.op, tc.dst, tc.src))
			assert.Equal(t, tc.want, tc.dst)
		})
	}
	for dt := range dataTypes {
		_, ok := hostReductions[dt]
		assert.Equal(t, dt.Reducible(), ok, "%s: host operations exactly for the reducible types", dt)
	}
	assert.Error(t, reduceInto(Float8E4M3, Sum, []byte{1}, []byte{2}), "fp8 has no reduction")
	assert.Error(t, reduceInto(Int32, Sum, make([]byte, 4), make([]byte, 8)), "lengths differ")
}

// TestHostReduceInParts: a reduction of several MiB, cut into parts on several goroutines, gives
// the bytes of one pass over the whole (ops.combine and ops.divide called once), for every
// reducible type; random bytes, so NaNs and wrapping integers included.
func TestHostReduceInParts(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // parts on 4 goroutines even on a smaller machine
	const n = 5*hostReducePartBytes + 24
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	for dt, ops := range hostReductions {
		dst, src := random(), random()
		want := slices.Clone(dst)
		ops.combine(want, src, Max)
		require.NoError(t, reduceInto(dt, Max, dst, src))
		assert.True(t, slices.Equal(want, dst), "%s max", dt)
		ops.divide(want, 7)
		require.NoError(t, divideBy(dt, dst, 7))
		assert.True(t, slices.Equal(want, dst), "%s divided", dt)
	}
}

// BenchmarkHostReduce: the host side of a reduction across hosts, 64 MiB combined into 64 MiB.
func BenchmarkHostReduce(b *testing.B) {
	for _, dt := range []DataType{Float32, BFloat16} {
		b.Run(dt.String(), func(b *testing.B) {
			dst, src := make([]byte, 64<<20), make([]byte, 64<<20)
			b.SetBytes(int64(len(dst)))
			for b.Loop() {
				if err := reduceInto(dt, Sum, dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReduceHosts: the hosts' parts reduced into the first in host order; avg sums, then divides
// by the rank count (not the host count); max leaves no division.
func TestReduceHosts(t *testing.T) {
	parts := [][]byte{bytesOf[int32](1, -8), bytesOf[int32](5, 2), bytesOf[int32](9, -30)}
	part := func(h int) []byte { return parts[h] }
	require.NoError(t, reduceHosts(Int32, Avg, 3, part, 5))
	assert.Equal(t, bytesOf[int32](3, -7), parts[0], "(1+5+9)/5, (-8+2-30)/5 truncated")
	parts = [][]byte{bytesOf[int32](1, -8), bytesOf[int32](5, 2)}
	require.NoError(t, reduceHosts(Int32, Max, 2, part, 5))
	assert.Equal(t, bytesOf[int32](5, 2), parts[0])
	assert.Equal(t, Sum, combining(Avg))
	assert.Equal(t, Prod, combining(Prod))
}

func TestDivideBy(t *testing.T) {
	tests := []struct {
		name string
		dt   DataType
		b    []byte
		want []byte
	}{
		{"int8 truncates toward zero", Int8, bytesOf[int8](-7, 7), bytesOf[int8](-2, 2)},
		{"uint64", Uint64, bytesOf[uint64](10, math.MaxUint64), bytesOf[uint64](3, math.MaxUint64/3)},
		{"int64 negative", Int64, bytesOf[int64](-10), bytesOf[int64](-3)},
		{"float32", Float32, bytesOf[float32](1, 3), bytesOf[float32](1.0/3, 1)},
		{"float16 rounds once", Float16, halves(halfprec.ToHalf, 1), halves(halfprec.ToHalf, float32(1.0)/3)},
		{"bfloat16", BFloat16, halves(halfprec.ToBfloat, 3), halves(halfprec.ToBfloat, 1)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, divideBy(tc.dt, tc.b, 3))
			assert.Equal(t, tc.want, tc.b)
		})
	}
}

func TestHostsOf(t *testing.T) {
	hostOf, hosts := hostsOf([]uint64{7, 7, 3, 7, 3, 9})
	assert.Equal(t, []int{0, 0, 1, 0, 1, 2}, hostOf)
	assert.Equal(t, [][]int{{0, 1, 3}, {2, 4}, {5}}, hosts)
}

// checkPeerPairing checks a pairing of the step across hosts (peers gives a rank's sendTo and
// recvFrom): every rank takes every other host's result from exactly one rank of that host, that
// rank sends it to this one, and only then.
func checkPeerPairing(t *testing.T, hashes []uint64, peers func(hosts [][]int, hostOf []int, r int) (sendTo, recvFrom []int)) {
	t.Helper()
	hostOf, hosts := hostsOf(hashes)
	sends := map[[2]int]int{} // (from, to) -> count
	for r := range hashes {
		sendTo, _ := peers(hosts, hostOf, r)
		for _, to := range sendTo {
			assert.NotEqual(t, hostOf[r], hostOf[to], "rank %d sends within its host (hosts %v)", r, hosts)
			sends[[2]int{r, to}]++
		}
	}
	for r := range hashes {
		_, recvFrom := peers(hosts, hostOf, r)
		require.Len(t, recvFrom, len(hosts))
		for h, from := range recvFrom {
			assert.Equal(t, h, hostOf[from], "rank %d takes host %d's result from rank %d of host %d", r, h, from, hostOf[from])
			if h == hostOf[r] {
				assert.Equal(t, r, from)
				continue
			}
			assert.Equal(t, 1, sends[[2]int{from, r}], "rank %d sends to rank %d once (hosts %v)", from, r, hosts)
			delete(sends, [2]int{from, r})
		}
	}
	assert.Empty(t, sends, "sends nobody receives (hosts %v)", hosts)
}

// TestCrossHostPeers: the whole-result pairing, for hosts of equal and unequal sizes.
func TestCrossHostPeers(t *testing.T) {
	for _, hashes := range [][]uint64{
		{1, 2},
		{1, 1, 2, 2},
		{1, 2, 1, 2, 1, 2},
		{1, 1, 1, 2},
		{5, 7, 7, 9, 9, 9},
	} {
		checkPeerPairing(t, hashes, crossHostPeers)
	}
}

// TestShardPeers: the sharded AllReduce's pairing, on hosts of equal sizes (the only ones it
// runs on: equalHosts), swaps shards only between ranks of the same local index.
func TestShardPeers(t *testing.T) {
	for _, hashes := range [][]uint64{
		{1, 2},
		{1, 1, 2, 2},
		{1, 2, 1, 2, 1, 2},
		{3, 3, 3, 4, 4, 4, 5, 5, 5},
	} {
		hostOf, hosts := hostsOf(hashes)
		require.True(t, equalHosts(hosts), "hosts %v", hosts)
		index := func(r int) int { return slices.Index(hosts[hostOf[r]], r) }
		shard := func(hosts [][]int, hostOf []int, r int) ([]int, []int) {
			sendTo, recvFrom := shardPeers(hosts, hostOf[r], index(r))
			for _, q := range slices.Concat(sendTo, recvFrom) {
				assert.Equal(t, index(r), index(q), "rank %d pairs with rank %d of another local index (hosts %v)", r, q, hosts)
			}
			return sendTo, recvFrom
		}
		checkPeerPairing(t, hashes, shard)
	}
	for _, hashes := range [][]uint64{{1, 1, 2}, {5, 7, 7, 9, 9, 9}} {
		_, hosts := hostsOf(hashes)
		assert.False(t, equalHosts(hosts), "hosts %v", hosts)
	}
}

// TestByLocalIndex: the order in which the hierarchical ReduceScatter arranges its blocks and the
// hierarchical AllGather receives its parts: every rank once, group j (positions j*hosts to
// (j+1)*hosts-1) the ranks of local index j in host order.
func TestByLocalIndex(t *testing.T) {
	for _, tc := range []struct {
		hashes []uint64
		want   []int
	}{
		{[]uint64{1, 2}, []int{0, 1}},
		{[]uint64{1, 1, 2, 2}, []int{0, 2, 1, 3}},
		{[]uint64{1, 2, 1, 2}, []int{0, 1, 2, 3}},
		{[]uint64{3, 3, 4, 4, 5, 5}, []int{0, 2, 4, 1, 3, 5}},
		{[]uint64{7, 8, 9, 7, 8, 9}, []int{0, 1, 2, 3, 4, 5}},
	} {
		hostOf, hosts := hostsOf(tc.hashes)
		order := byLocalIndex(hosts)
		assert.Equal(t, tc.want, order, "hosts %v", hosts)
		for p, r := range order {
			j, h := p/len(hosts), p%len(hosts)
			assert.Equal(t, h, hostOf[r], "position %d", p)
			assert.Equal(t, j, slices.Index(hosts[h], r), "position %d", p)
		}
	}
}

// TestLinkPeers: the ranks a rank makes links with: on hosts of equal size those of the other
// hosts only, on hosts of different sizes every other rank.
func TestLinkPeers(t *testing.T) {
	for _, tc := range []struct {
		hashes []uint64
		rank   int
		want   []int
	}{
		{[]uint64{1, 2}, 0, []int{1}},
		{[]uint64{1, 1, 2, 2}, 0, []int{2, 3}},
		{[]uint64{1, 2, 1, 2}, 3, []int{0, 2}},
		{[]uint64{3, 3, 4, 4, 5, 5}, 4, []int{0, 1, 2, 3}},
		{[]uint64{1, 1, 1, 2}, 1, []int{0, 2, 3}}, // hosts of 3 and 1: every other rank
		{[]uint64{1, 1, 1, 2}, 3, []int{0, 1, 2}},
	} {
		hostOf, hosts := hostsOf(tc.hashes)
		assert.Equal(t, tc.want, linkPeers(hosts, hostOf, tc.rank), "hosts %v, rank %d", hosts, tc.rank)
	}
}

// TestSpanningSetupFails: four ranks of two "hosts" (hashes given, ranks alternating) build the
// spanning path's per-host bootstraps (each host's first rank runs the root and sends its id to
// the others over the job's bootstrap); the local Comm then fails on this machine (no GPU here,
// or device -1 where there is one), and newSpanning returns that error, named, with what it built
// released: no panic, no rank left waiting.
func TestSpanningSetupFails(t *testing.T) {
	hashes := []uint64{10, 20, 10, 20}
	failed := runRanks(t, len(hashes), func(ctx context.Context, r int, b *bootstrap.TCP) error {
		ranks, err := exchangeRanks(ctx, b, rankIdentity{host: hashes[r]})
		if err != nil {
			return err
		}
		assert.Equal(t, hashes, hostHashes(ranks))
		cctx := core.NewContext()
		defer cctx.Close()
		s, err := newSpanning(ctx, b, cctx, -1, hashes, cuda.Context{})
		assert.Nil(t, s)
		return err
	})
	for r, err := range failed {
		require.Error(t, err, "rank %d", r)
		assert.Contains(t, err.Error(), "collectives among host", "rank %d: %v", r, err)
		assert.Contains(t, err.Error(), "2 ranks", "rank %d", r)
	}
}
