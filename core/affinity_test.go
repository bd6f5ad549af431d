package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCPUList(t *testing.T) {
	tests := []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "", want: nil},
		{in: "3", want: []int{3}},
		{in: "0-3", want: []int{0, 1, 2, 3}},
		{in: "0-1,64-65", want: []int{0, 1, 64, 65}},
		{in: "2-1", bad: true},
		{in: "a", bad: true},
		{in: "1,", bad: true},
		{in: "-1", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseCPUList(tc.in)
			if tc.bad {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCPUMask(t *testing.T) {
	assert.Equal(t, []uint64{0b1011}, cpuMask([]int{0, 1, 3}))
	assert.Equal(t, []uint64{1, 1 << 1}, cpuMask([]int{0, 65}))
}
