package testutil

import (
	"context"
	"encoding/hex"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// Ranks as processes: a test whose ranks must be processes of their own, as a job's are, runs this
// test binary again as each rank (StartRanks), which learns its rank, the rank count and the job's
// id (a bootstrap id, say) from these variables (ProcessRank).
const (
	RankVar   = "MSCCLPP_TEST_RANK"
	NRanksVar = "MSCCLPP_TEST_NRANKS"
	JobIDVar  = "MSCCLPP_TEST_JOB_ID"
)

// StartRanks starts n processes of this test binary that run the tests pattern matches
// (-test.run), rank r of them told r, n and id, and returns them running; ctx ends them. setup,
// when not nil, adds to rank r's command before it starts (variables of its own, where its output
// goes: this process's by default).
func StartRanks(t testing.TB, ctx context.Context, pattern string, n int, id []byte, setup func(r int, cmd *exec.Cmd)) []*exec.Cmd {
	t.Helper()
	cmds := make([]*exec.Cmd, n)
	for r := range n {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run="+pattern, "-test.count=1")
		cmd.Env = append(os.Environ(), RankVar+"="+strconv.Itoa(r), NRanksVar+"="+strconv.Itoa(n),
			JobIDVar+"="+hex.EncodeToString(id))
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if setup != nil {
			setup(r, cmd)
		}
		require.NoError(t, cmd.Start())
		cmds[r] = cmd
	}
	return cmds
}

// ProcessRank reports the rank, the rank count and the job's id that StartRanks gave this process;
// ok is false in a process it did not start.
func ProcessRank() (rank, n int, id []byte, ok bool) {
	rank, errRank := strconv.Atoi(os.Getenv(RankVar))
	n, errN := strconv.Atoi(os.Getenv(NRanksVar))
	id, errID := hex.DecodeString(os.Getenv(JobIDVar))
	return rank, n, id, errRank == nil && errN == nil && errID == nil
}
