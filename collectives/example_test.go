package collectives_test

import (
	"context"

	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// Each rank builds one Comm on its GPU over a communicator (a bootstrap and a context), then
// queues collectives on its streams. examples/go/collectives is the whole program, with the
// bootstrap's unique id shared over MPI; it runs under mpirun on a GPU host.
func Example() {
	var (
		comm     *core.Communicator // core.NewCommunicator(bootstrap, core.NewContext())
		gpu      int                // this rank's CUDA device
		buf, all cuda.DevicePtr     // device buffers of n and n*ranks float32
		n        int
		stream   cuda.Stream
	)
	c, err := collectives.New(context.Background(), comm, gpu) // every rank calls it
	if err != nil {
		return
	}
	defer c.Close()
	_ = c.AllReduce(buf, buf, n, collectives.Float32, collectives.Sum, stream) // in place
	_ = c.AllGather(buf, all, n, collectives.Float32, stream)
}
