package collectives

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mscclpp-go/mscclpp/core/fifo"
)

// TestPortRows: two channels (gather and scatter) per registration and peer fit the 2^10 proxy
// connections a trigger can name, and no more rows than registrations.
func TestPortRows(t *testing.T) {
	tests := []struct{ nPeers, rows int }{
		{1, maxRegistrations}, {3, 170}, {7, 73}, {15, 34}, {63, 8},
	}
	for _, tt := range tests {
		rows := portRows(tt.nPeers)
		assert.Equal(t, tt.rows, rows, "%d peers", tt.nPeers)
		assert.LessOrEqual(t, 2*rows*tt.nPeers, 1<<fifo.BitsConnID, "%d peers", tt.nPeers)
	}
}
