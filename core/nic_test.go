package core

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
