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

// Registering a buffer (every rank registers its own, in the same order) lets the large calls
// whose buffers lie in it move data straight between the ranks' buffers (zero-copy).
func ExampleComm_Register() {
	var (
		c      *collectives.Comm // collectives.New(...)
		pool   cuda.DevicePtr    // a cudaMalloc'd buffer the application's tensors live in
		bytes  uint64
		n      int
		stream cuda.Stream
	)
	reg, err := c.Register(context.Background(), pool, bytes)
	if err != nil {
		return
	}
	_ = c.AllReduce(pool, pool, n, collectives.Float32, collectives.Sum, stream) // zero-copy when large
	// Close it once its calls have finished (synchronize the stream), before freeing pool.
	_ = stream.Synchronize()
	_ = reg.Close()
}
