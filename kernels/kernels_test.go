package kernels

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// committedPTX reads ptx/, which the tests find whatever the build embeds.
func committedPTX(t *testing.T) (names []string, ptx map[string][]byte) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("ptx", "*.ptx"))
	require.NoError(t, err)
	ptx = map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		name := strings.TrimSuffix(filepath.Base(f), ".ptx")
		names = append(names, name)
		ptx[name] = b
	}
	return names, ptx
}

// TestModulesAreTheCommittedPTX: the embedded modules are the committed PTX, or fatbins made
// from exactly that PTX (fatbin/NAME.ptx.sha256 is the hash of the PTX make compiled).
func TestModulesAreTheCommittedPTX(t *testing.T) {
	const fatbinMagic = 0xBA55ED50 // the first word of a fatbin, little-endian
	names, ptx := committedPTX(t)
	mods, err := Modules()
	require.NoError(t, err)
	var got []string
	for _, m := range mods {
		got = append(got, m.Name)
		switch ImageFormat {
		case "ptx":
			assert.Equal(t, ptx[m.Name], m.Image, m.Name)
		case "fatbin":
			require.GreaterOrEqual(t, len(m.Image), 4, m.Name)
			assert.Equal(t, uint32(fatbinMagic), binary.LittleEndian.Uint32(m.Image), m.Name)
			made, err := os.ReadFile(filepath.Join("fatbin", m.Name+".ptx.sha256"))
			require.NoError(t, err, m.Name)
			sum := sha256.Sum256(ptx[m.Name])
			assert.Equal(t, hex.EncodeToString(sum[:]), strings.TrimSpace(string(made)),
				"fatbin/%s.fatbin was made from other PTX: run make fatbins", m.Name)
		default:
			t.Fatalf("unknown ImageFormat %q", ImageFormat)
		}
	}
	assert.Equal(t, names, got)
}

// TestModulesHaveTheirEntryPoints checks that the PTX declares the kernels the collectives
// package launches: where the kernel reduces, one per element type (every operator) and one per
// type of distinct sums (sum compiled in; unsigned types sum with the signed ones).
func TestModulesHaveTheirEntryPoints(t *testing.T) {
	names, ptx := committedPTX(t)
	entries := map[string]bool{}
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	for _, name := range names {
		for _, e := range entry.FindAllSubmatch(ptx[name], -1) {
			entries[string(e[1])] = true
		}
	}
	assert.Equal(t, []string{"allgather_direct", "allgather_ll128", "allgather_packet", "allgather_port", "allgather_put",
		"allreduce_direct", "allreduce_ll128", "allreduce_oneshot", "allreduce_packet", "allreduce_packet2", "allreduce_port", "allreduce_rsag", "allreduce_rsag_port", "alltoall_ll128", "alltoall_put",
		"broadcast_ll128", "broadcast_packet", "broadcast_put", "broadcast_ring", "broadcast_sag", "reducescatter_packet", "reducescatter_put", "scale",
		"sendrecv", "sendrecv_ll128"}, names)
	for _, prefix := range []string{"mscclpp_allreduce_packet", "mscclpp_allreduce_packet2", "mscclpp_allreduce_ll128", "mscclpp_allreduce_rsag",
		"mscclpp_allreduce_direct", "mscclpp_allreduce_rsag_direct", "mscclpp_allreduce_rsag_port", "mscclpp_allreduce_port",
		"mscclpp_reducescatter_packet", "mscclpp_reducescatter_put"} {
		for _, suffix := range []string{"f32", "f16", "bf16", "f64", "i8", "u8", "i32", "u32", "i64", "u64"} {
			assert.True(t, entries[prefix+"_"+suffix], "%s_%s", prefix, suffix)
		}
		for _, suffix := range []string{"f32", "f16", "bf16", "f64", "i8", "i32", "i64"} {
			assert.True(t, entries[prefix+"_sum_"+suffix], "%s_sum_%s", prefix, suffix)
		}
	}
	for _, suffix := range []string{"f32", "f16", "bf16", "f64", "i8", "u8", "i32", "u32", "i64", "u64"} {
		assert.True(t, entries["mscclpp_scale_"+suffix], "mscclpp_scale_%s", suffix)
	}
	assert.True(t, entries["mscclpp_allgather_packet"])
	assert.True(t, entries["mscclpp_allgather_ll128"])
	assert.True(t, entries["mscclpp_allgather_put"])
	assert.True(t, entries["mscclpp_allgather_direct"])
	assert.True(t, entries["mscclpp_allgather_port"])
	assert.True(t, entries["mscclpp_broadcast_ll128"])
	assert.True(t, entries["mscclpp_alltoall_ll128"])
	assert.True(t, entries["mscclpp_alltoall_put"])
	assert.True(t, entries["mscclpp_broadcast_packet"])
	assert.True(t, entries["mscclpp_broadcast_put"])
	assert.True(t, entries["mscclpp_broadcast_sag"])
	assert.True(t, entries["mscclpp_broadcast_ring"])
	assert.True(t, entries["mscclpp_sendrecv"])
	assert.True(t, entries["mscclpp_sendrecv_ll128"])
}
