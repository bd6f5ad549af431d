package core

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/mscclpp-go/mscclpp/core/cuda"
	"github.com/mscclpp-go/mscclpp/core/fabric"
	"github.com/mscclpp-go/mscclpp/internal/config"
	"github.com/mscclpp-go/mscclpp/internal/logging"
)

// One NIC per GPU: where a machine has several RDMA devices, a rank's network connections use
// the one nearest its GPU on the PCI tree, as NCCL does, so that GPU memory and the NIC share a
// PCIe switch where they can. Locality comes from sysfs: the GPU's PCI function under
// /sys/bus/pci/devices and each RDMA device's under /sys/class/infiniband/<name>/device, both
// links into /sys/devices, whose path is the PCI tree.

// networkDomain is the libfabric domain the context's IB endpoint opens on: UseNetDomain's, else
// MSCCLPP_NET_DOMAIN's, else MSCCLPP_NET_IFNAME's interface's (domainOfInterface), else the RDMA
// device nearest gpu (nicForGPU), else "" (the provider's choice). c.mu is held.
func (c *Context) networkDomain(gpu int) string {
	if c.netDomain != "" {
		return c.netDomain
	}
	if d := config.NetDomain.Get(); d != "" {
		return d
	}
	provider, err := fabric.NetworkProvider()
	if err != nil {
		return "" // openFabric names the failure
	}
	if ifname := config.NetIfname.Get(); ifname != "" {
		domain, why := domainOfInterface("/", provider, ifname)
		logging.Logger().Info("network device chosen", "provider", provider, "domain", domain, "interface", ifname, "why", why)
		return domain
	}
	domain, why := nicForGPU(provider, gpu)
	if domain != "" {
		logging.Logger().Info("network device chosen", "provider", provider, "domain", domain, "gpu", gpu, "why", why)
	}
	return domain
}

// sysClassIB is where Linux lists RDMA devices (verbs and efa alike).
const sysClassIB = "/sys/class/infiniband"

// rdmaProviders are the providers whose domains are RDMA devices with a PCI function.
var rdmaProviders = []string{"verbs", "efa"}

// nicForGPU picks the libfabric domain of the network connections of a context whose GPU is
// ordinal: among MSCCLPP_HCA_DEVICES, or else every domain provider offers, the one nearest
// the GPU. It returns "" (the provider's choice) for providers that are not RDMA ones, when
// there is nothing to choose from, or when no candidate's locality is known; why says how the
// choice was made, for the log.
func nicForGPU(provider string, ordinal int) (domain, why string) {
	if !isProvider(rdmaProviders, provider) {
		return "", ""
	}
	var candidates []string
	if list := config.HcaDevices.Get(); list != "" {
		for _, d := range strings.Split(list, ",") {
			if d = strings.TrimSpace(d); d != "" {
				candidates = append(candidates, d)
			}
		}
	} else if all, err := fabric.Domains(provider); err == nil {
		candidates = all
	}
	switch {
	case len(candidates) == 0:
		return "", ""
	case len(candidates) == 1:
		return candidates[0], "the only candidate"
	case ordinal < 0:
		return candidates[0], "no GPU: the first candidate"
	}
	dev, err := cuda.GetDevice(ordinal)
	if err != nil {
		return candidates[0], "GPU unknown: the first candidate"
	}
	busID, err := dev.PCIBusID()
	if err != nil {
		return candidates[0], "GPU's PCI address unknown: the first candidate"
	}
	if d, ok := nearestNIC("/", busID, candidates); ok {
		return d, "nearest the GPU on the PCI tree"
	}
	return candidates[0], "locality unknown: the first candidate"
}

// domainOfInterface is the libfabric domain of provider that the network interface ifname
// (eth0, ib0) is: for verbs and efa, the RDMA device whose PCI function also carries ifname
// (sysfs under sysRoot: /sys/class/infiniband/<device>/device/net/<ifname>; efa's domain is
// <device>-rdm); for the others (tcp), whose domains are interfaces, ifname itself. An RDMA
// provider with no device behind ifname gets ifname too, so that opening it fails with the
// provider's domains named. why says which, for the log.
func domainOfInterface(sysRoot, provider, ifname string) (domain, why string) {
	if !isProvider(rdmaProviders, provider) {
		return ifname, "MSCCLPP_NET_IFNAME: the provider's domains are interfaces"
	}
	devices, err := os.ReadDir(filepath.Join(sysRoot, sysClassIB))
	if err == nil {
		for _, d := range devices {
			if _, err := os.Stat(filepath.Join(sysRoot, sysClassIB, d.Name(), "device", "net", ifname)); err == nil {
				if isProvider([]string{"efa"}, provider) {
					return d.Name() + "-rdm", "MSCCLPP_NET_IFNAME: the RDMA device behind the interface"
				}
				return d.Name(), "MSCCLPP_NET_IFNAME: the RDMA device behind the interface"
			}
		}
	}
	return ifname, "MSCCLPP_NET_IFNAME: no RDMA device behind the interface"
}

// isProvider reports whether provider is one of names, alone or as the core of a
// layered provider ("verbs;ofi_rxm").
func isProvider(names []string, provider string) bool {
	core, _, _ := strings.Cut(provider, ";")
	for _, n := range names {
		if core == n {
			return true
		}
	}
	return false
}

// nearestNIC returns the domain of domains whose PCI function is nearest, on the PCI tree under
// sysRoot, to the PCI function busID (a GPU's, such as 0000:17:00.0): the fewest steps up from
// one and down to the other. Ties go to the earlier domain; domains whose locality sysfs does not
// tell are passed over. ok is false when none is known.
func nearestNIC(sysRoot, busID string, domains []string) (domain string, ok bool) {
	gpu, err := filepath.EvalSymlinks(filepath.Join(sysRoot, pciDevicesDir, strings.ToLower(busID)))
	if err != nil {
		return "", false
	}
	best := -1
	for _, d := range domains {
		nic, err := filepath.EvalSymlinks(filepath.Join(sysRoot, sysClassIB, rdmaDevice(d), "device"))
		if err != nil {
			continue
		}
		if dist := treeDistance(gpu, nic); best < 0 || dist < best {
			domain, best = d, dist
		}
	}
	return domain, best >= 0
}

// rdmaDevice is the RDMA device behind a libfabric domain name: efa names its domains
// <device>-rdm and <device>-dgrm, verbs <device> and <device>-xrc or -dgram.
func rdmaDevice(domain string) string {
	for _, suffix := range []string{"-rdm", "-dgrm", "-dgram", "-xrc"} {
		if d, ok := strings.CutSuffix(domain, suffix); ok {
			return d
		}
	}
	return domain
}

// treeDistance counts the steps between two paths of a tree: up from a to their deepest common
// folder, then down to b.
func treeDistance(a, b string) int {
	pa := strings.Split(filepath.Clean(a), string(filepath.Separator))
	pb := strings.Split(filepath.Clean(b), string(filepath.Separator))
	common := 0
	for common < len(pa) && common < len(pb) && pa[common] == pb[common] {
		common++
	}
	return len(pa) - common + len(pb) - common
}
