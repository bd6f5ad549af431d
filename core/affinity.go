package core

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mscclpp-go/mscclpp/core/cuda"
)

// pciDevicesDir is where Linux describes PCI devices; each GPU's folder has local_cpulist, the
// CPUs nearest it (the locality NVML's CPU affinity also reports).
const pciDevicesDir = "/sys/bus/pci/devices"

// pinThreadToGPU pins the calling OS thread to the CPUs nearest dev. When the locality is
// unknown (no sysfs entry, a virtual machine that hides it) it leaves the thread unpinned and
// says so at INFO.
func pinThreadToGPU(dev cuda.Device, log *slog.Logger) {
	cpus, err := gpuLocalCPUs(dev)
	if err == nil {
		err = setThreadAffinity(cpuMask(cpus))
	}
	if err != nil {
		log.Info("proxy thread not pinned to the GPU's CPUs", "gpu", int(dev), "reason", err)
		return
	}
	log.Info("proxy thread pinned", "gpu", int(dev), "cpus", len(cpus))
}

// gpuLocalCPUs reads the CPUs nearest dev from sysfs.
func gpuLocalCPUs(dev cuda.Device) ([]int, error) {
	busID, err := dev.PCIBusID()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(pciDevicesDir, strings.ToLower(busID), "local_cpulist")
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	cpus, err := parseCPUList(strings.TrimSpace(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("%s lists no CPUs", path)
	}
	return cpus, nil
}

// parseCPUList parses the kernel's CPU list format, such as "0-31,64-95" or "3".
func parseCPUList(s string) ([]int, error) {
	var cpus []int
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(lo)
		if err != nil || first < 0 {
			return nil, fmt.Errorf("bad CPU list %q", s)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(hi); err != nil || last < first {
				return nil, fmt.Errorf("bad CPU list %q", s)
			}
		}
		for cpu := first; cpu <= last; cpu++ {
			cpus = append(cpus, cpu)
		}
	}
	return cpus, nil
}

// cpuMask turns CPU numbers into the kernel's bit mask of 64-bit words.
func cpuMask(cpus []int) []uint64 {
	maxCPU := 0
	for _, cpu := range cpus {
		maxCPU = max(maxCPU, cpu)
	}
	mask := make([]uint64, maxCPU/64+1)
	for _, cpu := range cpus {
		mask[cpu/64] |= 1 << (cpu % 64)
	}
	return mask
}
