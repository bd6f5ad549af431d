// Package gompi_test runs the Go bootstrap under mpirun, with the unique id shared through MPI
// (github.com/sbromberger/gompi). Outside mpirun it skips. `make mpi-gotest` runs it with 4 ranks.
package gompi_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	mpi "github.com/sbromberger/gompi"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/bootstrap"
)

func TestMain(m *testing.M) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		fmt.Println("skipping: not launched by mpirun (make mpi-gotest runs it)")
		os.Exit(0)
	}
	mpi.Start(false)
	code := m.Run()
	mpi.Stop()
	os.Exit(code)
}

func TestBootstrapWithIDFromMPI(t *testing.T) {
	world := mpi.NewCommunicator(nil)
	rank, nranks := world.Rank(), world.Size()
	opts := bootstrap.Options{Timeout: 20 * time.Second}

	var id bootstrap.UniqueID
	var root *bootstrap.Root
	if rank == 0 {
		var err error
		root, err = bootstrap.NewRoot(opts)
		require.NoError(t, err)
		id = root.ID()
	}
	idBytes := id[:]
	world.BcastBytes(idBytes, 0)
	copy(id[:], idBytes)

	b, err := bootstrap.Join(t.Context(), id, rank, nranks, opts)
	require.NoError(t, err)
	require.Equal(t, rank, b.Rank())
	require.Equal(t, nranks, b.Size())

	for _, perRank := range []int{0, 1, 1000, 1 << 20} {
		buf := make([]byte, perRank*nranks)
		copy(buf[rank*perRank:], bytes.Repeat([]byte{byte(rank + 1)}, perRank))
		require.NoError(t, b.AllGather(t.Context(), buf, perRank))
		for r := range nranks {
			require.Equal(t, bytes.Repeat([]byte{byte(r + 1)}, perRank), buf[r*perRank:(r+1)*perRank],
				"rank %d's slice of a %d-byte all-gather", r, perRank)
		}
		require.NoError(t, b.Barrier(t.Context()))
	}
	require.NoError(t, b.Close())
	if root != nil {
		require.NoError(t, root.Wait())
		require.NoError(t, root.Close())
	}
	world.Barrier()
	if rank == 0 {
		fmt.Printf("PASS gompi bootstrap: %d ranks\n", nranks)
	}
}
