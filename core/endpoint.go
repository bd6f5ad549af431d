package core

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// DeviceType says what kind of device an endpoint's memory lives on.
type DeviceType uint8

// The device types of an endpoint.
const (
	DeviceCPU DeviceType = 0
	DeviceGPU DeviceType = 1
)

func (t DeviceType) String() string {
	switch t {
	case DeviceCPU:
		return "CPU"
	case DeviceGPU:
		return "GPU"
	default:
		return fmt.Sprintf("DeviceType(%d)", uint8(t))
	}
}

// Device names one device of the host: a GPU by its CUDA ordinal, or the CPU (ID 0).
type Device struct {
	Type DeviceType
	ID   int
}

func (d Device) String() string {
	if d.Type == DeviceCPU {
		return "CPU"
	}
	return fmt.Sprintf("%v %d", d.Type, d.ID)
}

// EndpointConfig is what Context.CreateEndpoint makes an endpoint for: a transport and the device
// whose memory it moves. TransportP2P means CUDA IPC between GPUs of one host.
type EndpointConfig struct {
	Transport Transport
	Device    Device
}

// Endpoint is one side of a future connection: its configuration plus the identity of the
// process that created it (host, pid) and a random id. It is a plain value: copy it, marshal it
// and send it to the peer, which passes it to its Context.Connect.
type Endpoint struct {
	config EndpointConfig
	origin origin
	id     uint64
	// address is where a network or shared-memory peer reaches the endpoint: the libfabric
	// endpoint's name (empty for CUDA IPC).
	address string
}

// origin identifies the process that created an endpoint, a registered memory or a semaphore
// stub: its host (a hash of the host name and boot or machine id), its pid, and a random number
// drawn once per process, which tells processes with equal pids (in different containers) apart.
type origin struct {
	host    uint64
	process uint64
	pid     uint32
}

// Config returns the configuration the endpoint was created with.
func (e Endpoint) Config() EndpointConfig { return e.config }

// Transport returns the endpoint's transport.
func (e Endpoint) Transport() Transport { return e.config.Transport }

// Device returns the endpoint's device.
func (e Endpoint) Device() Device { return e.config.Device }

// HostHash returns the 64-bit identity of the host that created the endpoint.
func (e Endpoint) HostHash() uint64 { return e.origin.host }

// PID returns the id of the process that created the endpoint.
func (e Endpoint) PID() int { return int(e.origin.pid) }

// ID returns the endpoint's random 64-bit id.
func (e Endpoint) ID() uint64 { return e.id }

func (e Endpoint) String() string {
	return fmt.Sprintf("endpoint %016x (%v on %v, pid %d, host %016x)", e.id, e.config.Transport, e.config.Device, e.origin.pid, e.origin.host)
}

// Errors of endpoints and connections, each in one of the classes of package errs.
var (
	// ErrBadEndpoint: bytes given to UnmarshalEndpoint are not an endpoint this version reads.
	ErrBadEndpoint = errs.New(errs.ErrInvalidArgument, "malformed endpoint")
	// ErrDifferentHost: CUDA IPC was asked to reach another host.
	ErrDifferentHost = errs.New(errs.ErrInvalidUsage, "CUDA IPC needs both ends on one host")
)

// Wire format of an endpoint, little-endian, 192 bytes:
//
//	magic uint32 | version uint32 | transport uint32 | device type uint32 | device id int32 |
//	pid uint32 | host uint64 | process uint64 | id uint64 | address length uint32 |
//	reserved uint32 | address [maxAddressBytes]byte (zero past its length)
const (
	endpointMagic   = 0x5045534d // "MSEP"
	endpointVersion = 2
	maxAddressBytes = 136
	endpointBytes   = 6*4 + 3*8 + 8 + maxAddressBytes
	// maxDeviceID bounds device ids read from the wire; CUDA ordinals are far smaller.
	maxDeviceID = 1 << 16
)

// EndpointBytes is the length of Endpoint.MarshalBinary's encoding.
const EndpointBytes = endpointBytes

// MarshalBinary encodes the endpoint for UnmarshalEndpoint; it never fails.
func (e Endpoint) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, endpointBytes) // zeros past the address, which newEndpoint bounds
	b = binary.LittleEndian.AppendUint32(b, endpointMagic)
	b = binary.LittleEndian.AppendUint32(b, endpointVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(e.config.Transport))
	b = binary.LittleEndian.AppendUint32(b, uint32(e.config.Device.Type))
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(e.config.Device.ID)))
	b = binary.LittleEndian.AppendUint32(b, e.origin.pid)
	b = binary.LittleEndian.AppendUint64(b, e.origin.host)
	b = binary.LittleEndian.AppendUint64(b, e.origin.process)
	b = binary.LittleEndian.AppendUint64(b, e.id)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(e.address)))
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = append(b, e.address...)
	return b[:endpointBytes], nil
}

// UnmarshalEndpoint decodes an endpoint MarshalBinary encoded, possibly in another process.
// Input of the wrong size, magic or version, or with fields out of their domain, is refused
// with an error matching ErrBadEndpoint (class errs.ErrInvalidArgument).
func UnmarshalEndpoint(b []byte) (Endpoint, error) {
	if len(b) != endpointBytes {
		return Endpoint{}, fmt.Errorf("%w: %d bytes, want %d", ErrBadEndpoint, len(b), endpointBytes)
	}
	if m := binary.LittleEndian.Uint32(b); m != endpointMagic {
		return Endpoint{}, fmt.Errorf("%w: magic %#x", ErrBadEndpoint, m)
	}
	if v := binary.LittleEndian.Uint32(b[4:]); v != endpointVersion {
		return Endpoint{}, fmt.Errorf("%w: version %d, want %d", ErrBadEndpoint, v, endpointVersion)
	}
	if t := binary.LittleEndian.Uint32(b[12:]); t > 0xff {
		return Endpoint{}, fmt.Errorf("%w: unknown device type %d", ErrBadEndpoint, t)
	}
	e := Endpoint{
		config: EndpointConfig{
			Transport: Transport(binary.LittleEndian.Uint32(b[8:])),
			Device: Device{
				Type: DeviceType(b[12]),
				ID:   int(int32(binary.LittleEndian.Uint32(b[16:]))),
			},
		},
		origin: origin{
			pid:     binary.LittleEndian.Uint32(b[20:]),
			host:    binary.LittleEndian.Uint64(b[24:]),
			process: binary.LittleEndian.Uint64(b[32:]),
		},
		id: binary.LittleEndian.Uint64(b[40:]),
	}
	n, reserved := binary.LittleEndian.Uint32(b[48:]), binary.LittleEndian.Uint32(b[52:])
	addr := b[56:]
	switch {
	case reserved != 0:
		return Endpoint{}, fmt.Errorf("%w: reserved field %#x", ErrBadEndpoint, reserved)
	case n > maxAddressBytes:
		return Endpoint{}, fmt.Errorf("%w: address of %d bytes, at most %d", ErrBadEndpoint, n, maxAddressBytes)
	case slices.ContainsFunc(addr[n:], func(c byte) bool { return c != 0 }):
		return Endpoint{}, fmt.Errorf("%w: bytes after the address", ErrBadEndpoint)
	}
	e.address = string(addr[:n])
	if err := checkEndpointConfig(e.config); err != nil {
		return Endpoint{}, fmt.Errorf("%w: %w", ErrBadEndpoint, err)
	}
	return e, nil
}

// checkEndpointConfig checks a configuration's fields against their domains, without asking
// whether this machine can serve it.
func checkEndpointConfig(cfg EndpointConfig) error {
	switch cfg.Transport {
	case TransportP2P, TransportSHM, TransportIB:
	default:
		return fmt.Errorf("unknown transport %d: %w", int(cfg.Transport), errs.ErrInvalidArgument)
	}
	switch cfg.Device.Type {
	case DeviceCPU:
		if cfg.Device.ID != 0 {
			return fmt.Errorf("CPU device id %d, want 0: %w", cfg.Device.ID, errs.ErrInvalidArgument)
		}
	case DeviceGPU:
		if cfg.Device.ID < 0 || cfg.Device.ID >= maxDeviceID {
			return fmt.Errorf("GPU id %d out of range: %w", cfg.Device.ID, errs.ErrInvalidArgument)
		}
	default:
		return fmt.Errorf("unknown device type %d: %w", uint8(cfg.Device.Type), errs.ErrInvalidArgument)
	}
	return nil
}

// thisProcess is the origin of everything this process creates. The process number is random,
// drawn once; the host hash is read once.
var thisProcess = sync.OnceValue(func() origin {
	return origin{host: hostHash(), process: rand.Uint64() | 1, pid: uint32(os.Getpid())}
})

// HostHash returns the 64-bit identity of this host, the one Endpoint.HostHash reports for the
// endpoints this process creates: processes that get the same value run on one host.
func HostHash() uint64 { return thisProcess().host }

// hostHash returns this host's identity: hashHostIdentity of the host name and the kernel's boot
// id, or the machine id where there is no boot id.
func hostHash() uint64 {
	if id := config.HostID.Get(); id != "" {
		// MSCCLPP_HOSTID: processes of one machine that set different values act as separate
		// hosts (their connections cannot use CUDA IPC).
		return hashHostIdentity("MSCCLPP_HOSTID", id)
	}
	name, _ := os.Hostname()
	id := ""
	for _, f := range []string{"/proc/sys/kernel/random/boot_id", "/etc/machine-id"} {
		if b, err := os.ReadFile(f); err == nil {
			id = strings.TrimSpace(string(b))
			break
		}
	}
	return hashHostIdentity(name, id)
}

// hashHostIdentity is the 64-bit FNV-1a hash of the host name, a NUL and the boot or machine id.
func hashHostIdentity(hostname, id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(hostname))
	h.Write([]byte{0})
	h.Write([]byte(id))
	return h.Sum64()
}

// sameHost reports whether o is on the host of here.
func (o origin) sameHost(here origin) bool { return o.host == here.host }

// sameProcess reports whether o is the process here.
func (o origin) sameProcess(here origin) bool {
	return o.host == here.host && o.process == here.process && o.pid == here.pid
}
