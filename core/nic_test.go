package core

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/testutil"
)

// fakeSysfs builds, under a temporary root, a PCI tree with one GPU and the RDMA devices nics
// (name -> the PCI path of its function under /sys/devices), linked from /sys/bus/pci/devices
// and /sys/class/infiniband as Linux links them.
func fakeSysfs(t *testing.T, gpuBus, gpuPath string, nics map[string]string) string {
	t.Helper()
	root := t.TempDir()
	link := func(target, name string) {
		require.NoError(t, os.MkdirAll(filepath.Join(root, target), 0o755))
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755))
		require.NoError(t, os.Symlink(filepath.Join(root, target), filepath.Join(root, name)))
	}
	link(gpuPath, filepath.Join(pciDevicesDir, gpuBus))
	for name, path := range nics {
		link(path, filepath.Join(sysClassIB, name, "device"))
	}
	return root
}

func TestNearestNIC(t *testing.T) {
	const gpuBus = "0000:1a:00.0"
	const gpuPath = "sys/devices/pci0000:00/0000:00:01.0/0000:10:00.0/0000:1a:00.0" // behind a switch
	nics := map[string]string{
		"mlx5_0":     "sys/devices/pci0000:80/0000:80:01.0/0000:81:00.0",              // other root complex
		"mlx5_1":     "sys/devices/pci0000:00/0000:00:01.0/0000:10:00.0/0000:18:00.0", // same switch
		"mlx5_2":     "sys/devices/pci0000:00/0000:00:02.0/0000:20:00.0",              // same root complex
		"rdmap16s27": "sys/devices/pci0000:00/0000:00:01.0/0000:10:00.0/0000:19:00.0", // same switch (efa)
		"mlx5_3":     "sys/devices/pci0000:00/0000:00:01.0/0000:10:00.0/0000:18:00.1", // same switch, later
	}
	root := fakeSysfs(t, gpuBus, gpuPath, nics)
	tests := []struct {
		name    string
		domains []string
		want    string
		ok      bool
	}{
		{"the one behind the GPU's switch", []string{"mlx5_0", "mlx5_2", "mlx5_1"}, "mlx5_1", true},
		{"same root complex beats another", []string{"mlx5_0", "mlx5_2"}, "mlx5_2", true},
		{"ties go to the earlier", []string{"mlx5_3", "mlx5_1"}, "mlx5_3", true},
		{"efa domain names", []string{"mlx5_0", "rdmap16s27-rdm"}, "rdmap16s27-rdm", true},
		{"unknown devices passed over", []string{"mlx5_9", "mlx5_0"}, "mlx5_0", true},
		{"none known", []string{"mlx5_9"}, "", false},
		{"bus id in upper case", []string{"mlx5_2", "mlx5_1"}, "mlx5_1", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bus := gpuBus
			if tc.name == "bus id in upper case" {
				bus = "0000:1A:00.0" // as the driver writes it
			}
			got, ok := nearestNIC(root, bus, tc.domains)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	_, ok := nearestNIC(root, "0000:99:00.0", []string{"mlx5_0"})
	assert.False(t, ok, "a GPU sysfs does not know")
}

func TestTreeDistance(t *testing.T) {
	assert.Equal(t, 0, treeDistance("/a/b", "/a/b"))
	assert.Equal(t, 2, treeDistance("/a/b/c", "/a/b/d"))
	assert.Equal(t, 5, treeDistance("/a/b/c", "/a/x/y/z"))
}

func TestRDMADevice(t *testing.T) {
	for domain, want := range map[string]string{
		"mlx5_0": "mlx5_0", "mlx5_0-xrc": "mlx5_0", "mlx5_0-dgram": "mlx5_0",
		"rdmap16s27-rdm": "rdmap16s27", "rdmap16s27-dgrm": "rdmap16s27",
	} {
		assert.Equal(t, want, rdmaDevice(domain), domain)
	}
}

func TestNICForGPUOnlyRDMA(t *testing.T) {
	testutil.Override(t, config.HcaDevices, " mlx5_0, mlx5_1")
	d, _ := nicForGPU("tcp", 0)
	assert.Empty(t, d, "tcp's domains are interfaces: the provider chooses")
	d, why := nicForGPU("verbs;ofi_rxm", -1)
	assert.Equal(t, "mlx5_0", d, "no GPU: the first of MSCCLPP_HCA_DEVICES")
	assert.NotEmpty(t, why)
}

func TestDomainOfInterface(t *testing.T) {
	root := t.TempDir()
	// mlx5_1's PCI function carries the netdev ib1; rdmap16s27's (efa) carries eth2; mlx5_0 none.
	for _, dir := range []string{"mlx5_0/device", "mlx5_1/device/net/ib1", "rdmap16s27/device/net/eth2"} {
		require.NoError(t, os.MkdirAll(filepath.Join(root, sysClassIB, dir), 0o755))
	}
	tests := []struct {
		provider, ifname, want string
	}{
		{"verbs", "ib1", "mlx5_1"},
		{"verbs;ofi_rxm", "ib1", "mlx5_1"},
		{"efa", "eth2", "rdmap16s27-rdm"},
		{"verbs", "eth9", "eth9"}, // no device behind it: opening it names the failure
		{"tcp", "ib1", "ib1"},     // tcp's domains are interfaces
		{"tcp;ofi_rxm", "lo", "lo"},
	}
	for _, tc := range tests {
		got, why := domainOfInterface(root, tc.provider, tc.ifname)
		assert.Equal(t, tc.want, got, "%s on %s", tc.ifname, tc.provider)
		assert.Contains(t, why, "MSCCLPP_NET_IFNAME")
	}
	got, _ := domainOfInterface(filepath.Join(root, "none"), "verbs", "ib1")
	assert.Equal(t, "ib1", got, "no sysfs: the interface itself")
}

// TestNetIfnameOverTCP: MSCCLPP_NET_IFNAME picks the interface of tcp's network connections (the
// real provider on loopback), and bytes move over it.
func TestNetIfnameOverTCP(t *testing.T) {
	useProvider(t, TransportIB, "tcp")
	if !slices.Contains(fabricDomains(t, "tcp"), "lo") {
		t.Skip("libfabric's tcp provider offers no domain lo here")
	}
	testutil.Override(t, config.NetIfname, "lo")
	h := connectHostMemory(t, TransportIB, 8, 8)
	copy(h.src, "ifname:)")
	require.NoError(t, h.conn.Write(h.dstThere, 0, h.srcMem, 0, 8))
	require.NoError(t, h.conn.Flush(context.Background()))
	assert.Eventually(t, func() bool { return string(h.dst) == "ifname:)" }, 30*time.Second, 100*time.Microsecond,
		"the bytes never landed") // the receiver's context progresses on its own
	for _, c := range []*Context{h.sender, h.receiver} {
		n, err := c.fabric(TransportIB, -1)
		require.NoError(t, err)
		assert.Equal(t, "lo", n.ep.Domain())
	}
}

// TestNetDomainMissing: a domain the provider does not have is a named error listing its
// domains (the real tcp provider).
func TestNetDomainMissing(t *testing.T) {
	useProvider(t, TransportIB, "tcp")
	testutil.Override(t, config.NetIfname, "nosuchif0")
	c := NewContext()
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	_, err := c.CreateEndpoint(EndpointConfig{Transport: TransportIB, Device: Device{Type: DeviceCPU}})
	require.Error(t, err)
	assert.ErrorIs(t, err, fabric.ErrUnavailable)
	assert.Contains(t, err.Error(), `no domain "nosuchif0"`)
	for _, d := range fabricDomains(t, "tcp") {
		assert.Contains(t, err.Error(), d)
	}
}

// fabricDomains lists provider's domains, failing t when libfabric cannot say.
func fabricDomains(t *testing.T, provider string) []string {
	t.Helper()
	domains, err := fabric.Domains(provider)
	require.NoError(t, err)
	return domains
}
