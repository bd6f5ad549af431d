package cuda

import (
	"fmt"
	"strings"

	"github.com/mscclpp-go/mscclpp/core/errs"
)

// Device is a CUDA device: the driver's CUdevice handle. Get one with GetDevice.
type Device int

// DriverVersion returns the version of the CUDA driver, as cuDriverGetVersion reports it:
// 1000*major + 10*minor, e.g. 12020 for CUDA 12.2. It needs no device.
func DriverVersion() (int, error) {
	lib, err := driver.library()
	if err != nil {
		return 0, err
	}
	return lib.version, nil
}

// DeviceCount returns the number of CUDA devices the process can see.
// Without any, it returns an error matching ErrNoDevice.
func DeviceCount() (int, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	n, err := cuDeviceGetCount()
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("cuDeviceGetCount: %w", ErrNoDevice)
	}
	return n, nil
}

// GetDevice returns the device with the given ordinal, from 0 to DeviceCount()-1.
func GetDevice(ordinal int) (Device, error) {
	n, err := DeviceCount()
	if err != nil {
		return 0, err
	}
	if ordinal < 0 || ordinal >= n {
		return 0, fmt.Errorf("CUDA device ordinal %d out of range [0, %d): %w", ordinal, n, errs.ErrInvalidArgument)
	}
	d, err := cuDeviceGet(ordinal)
	if err != nil {
		return 0, fmt.Errorf("CUDA device %d: %w", ordinal, err)
	}
	return d, nil
}

// Name returns the device's product name, e.g. "NVIDIA H100 80GB HBM3".
func (d Device) Name() (string, error) {
	if err := initDriver(); err != nil {
		return "", err
	}
	name, err := cuDeviceGetName(d)
	if err != nil {
		return "", fmt.Errorf("CUDA device %d: %w", d, err)
	}
	return name, nil
}

// PCIBusID returns the device's PCI address as domain:bus:device.function, in lower case as
// /sys/bus/pci/devices names it, e.g. "0000:18:00.0".
func (d Device) PCIBusID() (string, error) {
	if err := initDriver(); err != nil {
		return "", err
	}
	id, err := cuDeviceGetPCIBusId(d)
	if err != nil {
		return "", fmt.Errorf("CUDA device %d: %w", d, err)
	}
	return strings.ToLower(id), nil
}

// ComputeCapability returns the device's compute capability, e.g. 9, 0 for an H100.
func (d Device) ComputeCapability() (major, minor int, err error) {
	if err := initDriver(); err != nil {
		return 0, 0, err
	}
	if major, err = cuDeviceGetAttribute(attrComputeCapabilityMajor, d); err != nil {
		return 0, 0, fmt.Errorf("CUDA device %d: compute capability major: %w", d, err)
	}
	if minor, err = cuDeviceGetAttribute(attrComputeCapabilityMinor, d); err != nil {
		return 0, 0, fmt.Errorf("CUDA device %d: compute capability minor: %w", d, err)
	}
	return major, minor, nil
}

// MultiprocessorCount returns the number of streaming multiprocessors (SMs) of the device, e.g.
// 132 for an H100 SXM.
func (d Device) MultiprocessorCount() (int, error) {
	if err := initDriver(); err != nil {
		return 0, err
	}
	n, err := cuDeviceGetAttribute(attrMultiprocessorCount, d)
	if err != nil {
		return 0, fmt.Errorf("CUDA device %d: multiprocessor count: %w", d, err)
	}
	return n, nil
}
