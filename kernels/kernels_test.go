package kernels

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestModulesHaveTheirEntryPoints checks that the embedded PTX declares the kernels the
// collectives package launches, one per element type where the kernel reduces.
func TestModulesHaveTheirEntryPoints(t *testing.T) {
	mods, err := Modules()
	require.NoError(t, err)
	entries := map[string]bool{}
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)
	names := []string{}
	for _, m := range mods {
		names = append(names, m.Name)
		for _, e := range entry.FindAllSubmatch(m.PTX, -1) {
			entries[string(e[1])] = true
		}
	}
	assert.Equal(t, []string{"allgather_direct", "allgather_packet", "allgather_port", "allgather_put", "allreduce_direct",
		"allreduce_packet", "allreduce_packet2", "allreduce_port", "allreduce_rsag", "allreduce_rsag_port"}, names)
	for _, prefix := range []string{"mscclpp_allreduce_packet", "mscclpp_allreduce_packet2", "mscclpp_allreduce_rsag",
		"mscclpp_allreduce_direct", "mscclpp_allreduce_rsag_direct", "mscclpp_allreduce_rsag_port", "mscclpp_allreduce_port"} {
		for _, suffix := range []string{"f32", "f16", "bf16", "i32", "u32", "f64"} {
			assert.True(t, entries[prefix+"_"+suffix], "%s_%s", prefix, suffix)
		}
	}
	assert.True(t, entries["mscclpp_allgather_packet"])
	assert.True(t, entries["mscclpp_allgather_put"])
	assert.True(t, entries["mscclpp_allgather_direct"])
	assert.True(t, entries["mscclpp_allgather_port"])
}
