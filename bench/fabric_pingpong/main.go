// Command fabric_pingpong measures the library's libfabric transport (core's Connection over
// TransportIB or TransportSHM, host memory) with a ping-pong between two processes, and runs
// libfabric's own fi_pingpong on the same provider and sizes in the same run, printing both
// side by side: one-way time per transfer (µs) and MB/s as fi_pingpong computes them (bytes of
// one transfer / one-way time).
//
//	go run ./bench/fabric_pingpong -p tcp -S 8,1M,4M,16M,64M
//	go run ./bench/fabric_pingpong -p shm
//	fabric_pingpong -p tcp -gpu -S 1M,4M,16M,64M   # also GPU memory, staged (needs a GPU)
//
// With -gpu the two ranks run a second time on GPU memory (rank r on GPU r % count), which the
// transport stages through host buffers, and a third pair of columns shows that time beside the
// host-memory one. The signal word is then GPU memory too, which the waiting rank reads with an
// 8-byte copy per poll (about as long as a small message takes: compare from 1 MiB).
// Each ping writes the message and then a signal word into the peer's memory
// (Connection.WriteWithSignal: one operation where the provider carries signals as remote CQ
// data; -split makes it two calls, Write and then UpdateAndSync, each an operation); the peer
// waits for the signal and answers the same way. The two processes are this program
// run again as rank 0 and rank 1 of one bootstrap, separate hosts (MSCCLPP_HOSTID) for tcp.
package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/mscclpp-go/mscclpp/core"
	"github.com/mscclpp-go/mscclpp/core/bootstrap"
	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/fabric"
)

var (
	provider = flag.String("p", "tcp", "libfabric provider: tcp (the network transport) or shm (shared memory)")
	sizesArg = flag.String("S", "8,1K,64K,1M,4M,16M,64M", "message sizes, comma-separated (K, M suffixes)")
	iters    = flag.Int("I", 0, "iterations per size (0: 10000 up to 64 KiB, fewer above)")
	noFI     = flag.Bool("no-fi", false, "do not run fi_pingpong (fabric_rma_pingpong still runs when it is built next to this program)")
	split    = flag.Bool("split", false, "ping with Write and then UpdateAndSync (two operations) instead of WriteWithSignal")
	onGPU    = flag.Bool("gpu", false, "also measure GPU memory (staged through host buffers)")
	list     = flag.Bool("list", false, "list the providers that offer what the transport needs, and exit")
	raw      = flag.Bool("raw", false, "ping-pong on core/fabric's Endpoint alone (WriteData and Progress: no core.Context, no progress goroutine, no messages; host memory only) instead of core.Connection")
	cpuProf  = flag.String("cpuprofile", "", "write each rank's CPU profile (go tool pprof) to this path plus .rank0 / .rank1")
)

func main() {
	flag.Parse()
	if *list {
		major, minor, err := fabric.Version()
		if err != nil {
			log.Fatal(err)
		}
		p, err := fabric.Providers()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("libfabric %d.%d: %s\n", major, minor, strings.Join(p, " "))
		return
	}
	sizes, err := parseSizes(*sizesArg)
	if err != nil {
		log.Fatal(err)
	}
	if r := os.Getenv("FABRIC_PINGPONG_RANK"); r != "" {
		rank, _ := strconv.Atoi(r)
		if *cpuProf != "" {
			f, err := os.Create(*cpuProf + ".rank" + r)
			if err != nil {
				log.Fatal(err)
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				log.Fatal(err)
			}
			defer f.Close()
			defer pprof.StopCPUProfile()
		}
		if err := runRank(rank, sizes, os.Getenv("FABRIC_PINGPONG_GPU") == "1"); err != nil {
			pprof.StopCPUProfile()
			log.Fatalf("rank %d: %v", rank, err)
		}
		return
	}
	transport := core.TransportIB
	if *provider == "shm" {
		transport = core.TransportSHM
	}
	major, minor, err := fabric.Version()
	if err != nil {
		log.Fatal(err)
	}
	host, _ := os.Hostname()
	if _, err := exec.LookPath("fi_pingpong"); err != nil && !*noFI {
		fmt.Println("# fi_pingpong is not installed here (libfabric-bin): the fi_pp columns stay empty")
	}
	fmt.Printf("# fabric_pingpong: provider %s (%v), libfabric %d.%d, host %s, %s\n", *provider, transport, major, minor, host, time.Now().Format("2006-01-02"))
	ours, err := runOurs(false)
	if err != nil {
		log.Fatal(err)
	}
	var staged map[int]result
	if *onGPU {
		if staged, err = runOurs(true); err != nil {
			log.Fatal(err)
		}
	}
	rma := rmaPingpongPath()
	if rma == "" {
		fmt.Println("# fabric_rma_pingpong is not built next to this program (make build/bin/fabric_rma_pingpong, or make gpu-bundle): the rma_pp column stays empty")
	}
	fmt.Printf("%10s %8s | %12s %10s | %12s %10s | %8s | %10s %8s", "bytes", "iters", "mscclpp us", "MB/s", "fi_pp us", "MB/s", "ours/fi", "rma_pp us", "ours/rma")
	if *onGPU {
		fmt.Printf(" | %12s %10s | %8s", "gpu us", "MB/s", "gpu/host")
	}
	fmt.Println()
	for _, s := range sizes {
		o := ours[s]
		fiUS, fiMB := -1.0, -1.0
		if !*noFI {
			fiUS, fiMB = fiPingpong(s, o.iters)
		}
		ratio := "-"
		if fiMB > 0 {
			ratio = fmt.Sprintf("%.2f", o.us/fiUS)
		}
		rmaUS, rmaRatio := -1.0, "-"
		if rma != "" {
			if rmaUS = rmaPingpong(rma, s, o.iters); rmaUS > 0 {
				rmaRatio = fmt.Sprintf("%.2f", o.us/rmaUS)
			}
		}
		fmt.Printf("%10d %8d | %12.2f %10.1f | %12.2f %10.1f | %8s | %10.2f %8s", s, o.iters, o.us, float64(s)/o.us, fiUS, fiMB, ratio, rmaUS, rmaRatio)
		if g, ok := staged[s]; ok {
			fmt.Printf(" | %12.2f %10.1f | %8.2f", g.us, float64(s)/g.us, g.us/o.us)
		}
		fmt.Println()
	}
}

type result struct {
	us    float64 // one-way time per transfer
	iters int
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		mult := 1
		switch {
		case strings.HasSuffix(f, "K"):
			mult, f = 1<<10, strings.TrimSuffix(f, "K")
		case strings.HasSuffix(f, "M"):
			mult, f = 1<<20, strings.TrimSuffix(f, "M")
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		out = append(out, n*mult)
	}
	return out, nil
}

func itersFor(size int) int {
	if *iters > 0 {
		return *iters
	}
	switch {
	case size <= 64<<10: // fi_pingpong's small-message time settles only after a few thousand
		return 10000
	case size <= 4<<20:
		return 200
	default:
		return 50
	}
}

// runOurs starts the two ranks, on GPU memory or host memory, and collects rank 0's report.
func runOurs(gpu bool) (map[int]result, error) {
	root, err := bootstrap.NewRoot(bootstrap.Options{})
	if err != nil {
		return nil, err
	}
	defer root.Close()
	id := root.ID()
	var cmds [2]*exec.Cmd
	var out strings.Builder
	for r := range 2 {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Env = append(os.Environ(), "FABRIC_PINGPONG_RANK="+strconv.Itoa(r), "FABRIC_PINGPONG_ROOT="+hex.EncodeToString(id[:]),
			"MSCCLPP_NET_PROVIDER="+*provider)
		if gpu {
			cmd.Env = append(cmd.Env, "FABRIC_PINGPONG_GPU=1")
		}
		if *provider != "shm" {
			cmd.Env = append(cmd.Env, "MSCCLPP_HOSTID=pingpong-host-"+strconv.Itoa(r))
		}
		cmd.Stderr = os.Stderr
		if r == 0 {
			cmd.Stdout = &out
		}
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		cmds[r] = cmd
	}
	for r, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, err)
		}
	}
	res := map[int]result{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var size, n int
		var us float64
		if _, err := fmt.Sscan(line, &size, &n, &us); err == nil {
			res[size] = result{us: us, iters: n}
		}
	}
	return res, nil
}

// memory is the two buffers of one rank: the source, and the destination with its signal word
// after the last size.
type memory struct {
	src, dst   core.RegisteredMemory
	readSignal func() (uint64, error)
}

// hostMemory maps the two buffers in host memory.
func hostMemory(cctx *core.Context, transport core.Transport, maxSize int) (memory, error) {
	src, err := syscall.Mmap(-1, 0, maxSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return memory{}, err
	}
	dst, err := syscall.Mmap(-1, 0, maxSize+8, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return memory{}, err
	}
	m := memory{readSignal: func() (uint64, error) { return atomic.LoadUint64((*uint64)(unsafe.Pointer(&dst[maxSize]))), nil }}
	if m.src, err = cctx.RegisterMemory(cuda.DevicePtr(uintptr(unsafe.Pointer(&src[0]))), uint64(maxSize), transport); err != nil {
		return memory{}, err
	}
	m.dst, err = cctx.RegisterMemory(cuda.DevicePtr(uintptr(unsafe.Pointer(&dst[0]))), uint64(maxSize+8), transport)
	return m, err
}

// gpuMemory allocates the two buffers on GPU dev; the signal is read with an 8-byte copy into
// page-locked memory. The calling goroutine stays on its thread, with dev's context current.
func gpuMemory(cctx *core.Context, transport core.Transport, dev, maxSize int) (memory, error) {
	runtime.LockOSThread()
	d, err := cuda.GetDevice(dev)
	if err != nil {
		return memory{}, err
	}
	pctx, err := d.RetainPrimaryContext()
	if err != nil {
		return memory{}, err
	}
	if err := pctx.SetCurrent(); err != nil {
		return memory{}, err
	}
	stream, err := cuda.NewStream()
	if err != nil {
		return memory{}, err
	}
	word, err := cuda.MemHostAlloc(8)
	if err != nil {
		return memory{}, err
	}
	wordDev, err := cuda.MemHostGetDevicePointer(word)
	if err != nil {
		return memory{}, err
	}
	src, err := cctx.Alloc(dev, maxSize)
	if err != nil {
		return memory{}, err
	}
	dst, err := cctx.Alloc(dev, maxSize+8)
	if err != nil {
		return memory{}, err
	}
	m := memory{readSignal: func() (uint64, error) {
		if err := cuda.MemcpyAsync(wordDev, dst+cuda.DevicePtr(maxSize), 8, stream); err != nil {
			return 0, err
		}
		if err := stream.Synchronize(); err != nil {
			return 0, err
		}
		return atomic.LoadUint64((*uint64)(word)), nil
	}}
	if m.src, err = cctx.RegisterMemory(src, uint64(maxSize), transport); err != nil {
		return memory{}, err
	}
	m.dst, err = cctx.RegisterMemory(dst, uint64(maxSize+8), transport)
	return m, err
}

func runRank(rank int, sizes []int, gpu bool) error {
	rootID, _ := hex.DecodeString(os.Getenv("FABRIC_PINGPONG_ROOT"))
	var id bootstrap.UniqueID
	copy(id[:], rootID)
	ctx := context.Background()
	b, err := bootstrap.Join(ctx, id, rank, 2, bootstrap.Options{})
	if err != nil {
		return err
	}
	defer b.Close()
	cctx := core.NewContext()
	defer cctx.Close()
	comm := core.NewCommunicator(b, cctx)
	transport := core.TransportIB
	if *provider == "shm" {
		transport = core.TransportSHM
	}
	peer := 1 - rank
	maxSize := 0
	for _, s := range sizes {
		maxSize = max(maxSize, s)
	}
	if *raw {
		return runRaw(ctx, b, rank, sizes, maxSize)
	}
	device := core.Device{Type: core.DeviceCPU}
	var mem memory
	if gpu {
		ndev, err := cuda.DeviceCount()
		if err != nil {
			return err
		}
		device = core.Device{Type: core.DeviceGPU, ID: rank % ndev}
		mem, err = gpuMemory(cctx, transport, device.ID, maxSize)
		if err != nil {
			return fmt.Errorf("GPU memory: %w", err)
		}
	} else if mem, err = hostMemory(cctx, transport, maxSize); err != nil {
		return err
	}
	conn, err := comm.Connect(core.EndpointConfig{Transport: transport, Device: device}, peer, 0).Get(ctx)
	if err != nil {
		return err
	}
	srcMem, dstMem := mem.src, mem.dst
	if _, err := comm.SendMemory(dstMem, peer, 1).Get(ctx); err != nil {
		return err
	}
	remote, err := comm.RecvMemory(peer, 1).Get(ctx)
	if err != nil {
		return err
	}
	send := func(size int, seq uint64) error {
		if !*split {
			return conn.WriteWithSignal(remote, 0, srcMem, 0, uint64(size), remote, uint64(maxSize), seq)
		}
		if err := conn.Write(remote, 0, srcMem, 0, uint64(size)); err != nil {
			return err
		}
		return conn.UpdateAndSync(remote, uint64(maxSize), seq)
	}
	wait := func(seq uint64) error {
		for {
			v, err := mem.readSignal()
			if err != nil || v == seq {
				return err
			}
			if err := cctx.Progress(transport); err != nil {
				return err
			}
		}
	}
	return pingPong(ctx, b, rank, sizes, send, wait, conn.Flush)
}

// pingPong times the ping-pong for each size, after 10 warm-up round trips: round k, rank 0 sends
// (its ping carrying k) and waits for k back; rank 1 waits for k, then sends it back. Rank 0
// prints each size's one-way time. flush runs after each size.
func pingPong(ctx context.Context, b *bootstrap.TCP, rank int, sizes []int, send func(size int, seq uint64) error,
	wait func(seq uint64) error, flush func(context.Context) error) error {
	seq := uint64(0)
	for _, size := range sizes {
		n := itersFor(size)
		if err := b.Barrier(ctx); err != nil {
			return err
		}
		var start time.Time
		for i := -10; i < n; i++ {
			if i == 0 {
				start = time.Now()
			}
			seq++
			if rank == 0 {
				if err := send(size, seq); err != nil {
					return err
				}
				if err := wait(seq); err != nil {
					return err
				}
			} else {
				if err := wait(seq); err != nil {
					return err
				}
				if err := send(size, seq); err != nil {
					return err
				}
			}
		}
		if rank == 0 {
			fmt.Println(size, n, float64(time.Since(start).Microseconds())/float64(2*n))
		}
		if err := flush(ctx); err != nil {
			return err
		}
	}
	return b.Barrier(ctx)
}

// fiLine matches fi_pingpong's result line: bytes (8, 1k, 4m), #sent, #ack, total, time, MB/sec,
// usec/xfer.
var fiLine = regexp.MustCompile(`^\s*(\d+[kmg]?)\s+\S+\s+\S+\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)`)

// fiPingpong runs fi_pingpong's server and client on the provider for one size and returns its
// usec/xfer and MB/sec (-1 when it cannot run).
func fiPingpong(size, n int) (us, mbs float64) {
	port := strconv.Itoa(20000 + int(time.Now().UnixNano()%20000))
	args := []string{"-p", *provider, "-e", "rdm", "-I", strconv.Itoa(n), "-S", strconv.Itoa(size), "-B", port}
	server := exec.Command("fi_pingpong", args...)
	if err := server.Start(); err != nil {
		return -1, -1
	}
	defer server.Wait()
	time.Sleep(300 * time.Millisecond)
	out, err := exec.Command("fi_pingpong", append(args[:len(args)-2], "-P", port, "127.0.0.1")...).Output()
	if err != nil {
		_ = server.Process.Kill()
		return -1, -1
	}
	for _, line := range strings.Split(string(out), "\n") {
		if m := fiLine.FindStringSubmatch(line); m != nil { // one size per run
			mbs, _ = strconv.ParseFloat(m[2], 64)
			us, _ = strconv.ParseFloat(m[3], 64)
			return us, mbs
		}
	}
	return -1, -1
}

// rmaPingpongPath is the path of fabric_rma_pingpong (bench/fabric_rma_pingpong, C) next to this
// program, or "" when it is not there.
func rmaPingpongPath() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(self), "fabric_rma_pingpong")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// rmaPingpong runs fabric_rma_pingpong on the provider for one size and returns its one-way us (-1
// when it cannot run, or takes more than a minute): the provider's own time for what the library
// does, a write with remote CQ data each way, with no Go in the path.
func rmaPingpong(path string, size, n int) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, "-p", *provider, "-S", strconv.Itoa(size), "-I", strconv.Itoa(n)).Output()
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == strconv.Itoa(size) {
			us, err := strconv.ParseFloat(f[2], 64)
			if err == nil {
				return us
			}
		}
	}
	return -1
}

// runRaw is runRank's ping-pong on core/fabric's Endpoint alone: each ping one WriteData whose
// remote CQ data is the sequence number, each wait a loop of Progress until the data handler has
// seen it. Between this and core.Connection's ping-pong lies what the core layers add; between
// this and fabric_rma_pingpong, what Go and cgo add.
func runRaw(ctx context.Context, b *bootstrap.TCP, rank int, sizes []int, maxSize int) error {
	domain := ""
	if *provider == "tcp" {
		domain = "lo"
	}
	ep, err := fabric.Open(*provider, domain)
	if err != nil {
		return err
	}
	defer ep.Close()
	buf, err := syscall.Mmap(-1, 0, 2*maxSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return err
	}
	defer syscall.Munmap(buf)
	region, err := ep.Register(uint64(uintptr(unsafe.Pointer(&buf[0]))), uint64(len(buf)))
	if err != nil {
		return err
	}
	defer region.Deregister()
	addr, err := ep.Address()
	if err != nil {
		return err
	}
	r := region.Remote()
	card := binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, r.Addr), r.Size), r.Key)
	card = append(card, addr...)
	peer := 1 - rank
	if err := b.Send(ctx, peer, 7, card); err != nil {
		return err
	}
	theirs, err := b.Recv(ctx, peer, 7)
	if err != nil {
		return fmt.Errorf("peer's card: %w", err)
	}
	if len(theirs) < 24 {
		return fmt.Errorf("peer's card: %d bytes, want at least 24", len(theirs))
	}
	remote := fabric.Remote{Addr: binary.LittleEndian.Uint64(theirs), Size: binary.LittleEndian.Uint64(theirs[8:]), Key: binary.LittleEndian.Uint64(theirs[16:])}
	to, err := ep.AddPeer(theirs[24:])
	if err != nil {
		return err
	}
	var got atomic.Uint64
	if err := ep.SetDataHandler(func(d uint64) { got.Store(d) }); err != nil {
		return err
	}
	send := func(size int, seq uint64) error {
		return ep.WriteData(to, region, 0, remote, uint64(maxSize), uint64(size), seq)
	}
	wait := func(seq uint64) error {
		for got.Load() != seq {
			if err := ep.Progress(); err != nil {
				return err
			}
		}
		return nil
	}
	return pingPong(ctx, b, rank, sizes, send, wait, ep.Flush)
}
