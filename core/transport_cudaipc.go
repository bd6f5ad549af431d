package core

import "github.com/mscclpp-go/mscclpp/core/cuda"

// cudaIPC is the CUDA IPC transport: GPUs of one host reach each other's memory through
// cuIpcGetMemHandle/cuIpcOpenMemHandle (NVLink or PCIe), and a connection's data path is one
// CUDA stream on the local GPU whose copies the copy engines execute.
type cudaIPC struct{}

func (cudaIPC) export(base cuda.DevicePtr) (cuda.IpcMemHandle, error) {
	return cuda.IpcGetMemHandle(base)
}

func (cudaIPC) open(h cuda.IpcMemHandle) (cuda.DevicePtr, error) { return cuda.IpcOpenMemHandle(h) }

func (cudaIPC) unmap(p cuda.DevicePtr) error { return cuda.IpcCloseMemHandle(p) }

func (cudaIPC) connect(local, remote Endpoint) (link, error) {
	s, err := cuda.NewStream()
	if err != nil {
		return nil, err
	}
	return streamLink{s}, nil
}

// streamLink is a CUDA IPC connection's data path: its CUDA stream.
type streamLink struct{ stream cuda.Stream }

func (l streamLink) write(dst RegisteredMemory, dstOff uint64, src RegisteredMemory, srcOff, n uint64) error {
	return cuda.MemcpyAsync(dst.data+cuda.DevicePtr(dstOff), src.data+cuda.DevicePtr(srcOff), int(n), l.stream)
}

func (l streamLink) writeValue(dst RegisteredMemory, dstOff, value uint64) error {
	return cuda.StreamWriteValue64(l.stream, dst.data+cuda.DevicePtr(dstOff), value)
}

func (l streamLink) flushed() (bool, error) { return l.stream.Done() }

func (l streamLink) close() error { return l.stream.Destroy() }
