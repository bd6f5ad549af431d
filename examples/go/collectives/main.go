// Command collectives is the Go API's runnable example: an AllReduce and an AllGather of float32
// among the ranks of an MPI job, one GPU per rank (rank r uses GPU r % device count).
//
//	mpirun -np 2 ./collectives
//
// Rank 0 makes the bootstrap's unique id and broadcasts it over MPI (gompi); every rank joins,
// builds a core.Communicator and a collectives.Comm, runs the two collectives on its own stream,
// checks the results and prints one line. The exit status is 1 if any result is wrong.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"
	"unsafe"

	mpi "github.com/sbromberger/gompi"

	"github.com/mscclpp-go/mscclpp/collectives"
	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
)

const count = 1 << 20 // float32 elements per rank

// The CUDA calls below need the GPU's context current on the calling thread: keep main on one.
func init() { runtime.LockOSThread() }

func main() {
	mpi.Start(false)
	world := mpi.NewCommunicator(nil)
	err := run(world)
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", world.Rank(), err)
	}
	mpi.Stop()
	if err != nil {
		os.Exit(1)
	}
}

func run(world *mpi.Communicator) error {
	rank, nranks := world.Rank(), world.Size()
	ndev, err := cuda.DeviceCount()
	if err != nil {
		return err
	}
	dev, err := cuda.GetDevice(rank % ndev)
	if err != nil {
		return err
	}
	pctx, err := dev.RetainPrimaryContext()
	if err != nil {
		return err
	}
	defer pctx.Release()
	if err := pctx.SetCurrent(); err != nil {
		return err
	}

	// Bootstrap: rank 0's unique id, shared through MPI.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var id bootstrap.UniqueID
	if rank == 0 {
		root, err := bootstrap.NewRoot(bootstrap.Options{})
		if err != nil {
			return err
		}
		defer root.Close()
		id = root.ID()
	}
	world.BcastBytes(id[:], 0)
	boot, err := bootstrap.Join(ctx, id, rank, nranks, bootstrap.Options{})
	if err != nil {
		return err
	}
	defer boot.Close()
	cctx := core.NewContext()
	defer cctx.Close()
	comm, err := collectives.New(ctx, core.NewCommunicator(boot, cctx), int(dev))
	if err != nil {
		return err
	}
	defer comm.Close()

	// Buffers: every element of rank r's input is r+1.
	const bytes = count * 4
	host, err := cuda.MemHostAlloc(bytes * nranks)
	if err != nil {
		return err
	}
	defer cuda.MemFreeHost(host)
	hostDev, err := cuda.MemHostGetDevicePointer(host)
	if err != nil {
		return err
	}
	vals := unsafe.Slice((*float32)(host), count*nranks)
	for i := range count {
		vals[i] = float32(rank + 1)
	}
	data, err := cuda.MemAlloc(bytes)
	if err != nil {
		return err
	}
	defer cuda.MemFree(data)
	gathered, err := cuda.MemAlloc(bytes * nranks)
	if err != nil {
		return err
	}
	defer cuda.MemFree(gathered)
	stream, err := cuda.NewStream()
	if err != nil {
		return err
	}
	defer stream.Destroy()

	// AllGather of the inputs, then an in-place AllReduce (sum), both queued on one stream.
	err = errors.Join(
		cuda.MemcpyAsync(data, hostDev, bytes, stream),
		comm.AllGather(data, gathered, count, collectives.Float32, stream),
		comm.AllReduce(data, data, count, collectives.Float32, collectives.Sum, stream),
		cuda.MemcpyAsync(hostDev, data, bytes, stream),
		stream.Synchronize(),
	)
	if err != nil {
		return err
	}
	want := float32(nranks * (nranks + 1) / 2)
	for i, v := range vals[:count] {
		if v != want {
			return fmt.Errorf("allreduce: element %d is %v, want %v", i, v, want)
		}
	}
	if err := errors.Join(cuda.MemcpyAsync(hostDev, gathered, bytes*nranks, stream), stream.Synchronize()); err != nil {
		return err
	}
	for i, v := range vals {
		if want := float32(i/count + 1); v != want {
			return fmt.Errorf("allgather: element %d is %v, want %v", i, v, want)
		}
	}
	fmt.Printf("rank %d of %d (GPU %d): allreduce and allgather of %d floats: correct\n", rank, nranks, int(dev), count)
	return nil
}
