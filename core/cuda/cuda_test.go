package cuda

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mscclpp-go/mscclpp/core/errs"
	"github.com/mscclpp-go/mscclpp/internal/config"
)

// minComputeCapability is the oldest GPU architecture the library supports (Volta).
const minComputeCapability = 7

func TestMain(m *testing.M) {
	// Importing the package must load nothing: no test has called into it yet.
	if maps, err := os.ReadFile("/proc/self/maps"); err == nil && bytes.Contains(maps, []byte("libcuda")) {
		fmt.Fprintln(os.Stderr, "libcuda is mapped before the package was used")
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// requireDriver skips the test when this machine has no CUDA driver library.
func requireDriver(t *testing.T) {
	t.Helper()
	if _, err := DriverVersion(); errors.Is(err, ErrDriverNotFound) {
		t.Skipf("no CUDA driver: %v", err)
	}
}

// requireGPU skips the test when fewer than n GPUs are visible. It fails it when the driver
// reports something other than "no driver" or "no device".
func requireGPU(t *testing.T, n int) {
	t.Helper()
	have, err := DeviceCount()
	switch {
	case errors.Is(err, ErrDriverNotFound), errors.Is(err, ErrNoDevice):
		t.Skipf("needs %d GPU(s): %v", n, err)
	case err != nil:
		t.Fatalf("DeviceCount: %v", err)
	case have < n:
		t.Skipf("needs %d GPU(s), have %d", n, have)
	}
}

// withLibrary makes the package load path instead of the driver until the test ends.
func withLibrary(t *testing.T, path string) {
	t.Helper()
	config.CUDALibrary.Set(path)
	driver = newLoader()
	t.Cleanup(func() {
		config.CUDALibrary.Reset()
		driver = newLoader()
	})
}

func TestEntryPointTable(t *testing.T) {
	entries := entryPoints()
	require.NotEmpty(t, entries)
	names := map[string]bool{}
	symbols := map[string]bool{}
	for _, e := range entries {
		assert.False(t, names[e.name], "duplicate name %s", e.name)
		assert.False(t, symbols[e.symbol], "duplicate symbol %s", e.symbol)
		names[e.name], symbols[e.symbol] = true, true
		assert.True(t, strings.HasPrefix(e.symbol, e.name), "%s resolves to unrelated symbol %s", e.name, e.symbol)
		assert.False(t, strings.HasPrefix(e.name, "cuMulticast"), "%s is forbidden", e.name)
		assert.GreaterOrEqual(t, e.minVersion, 0, e.name)
	}
	assert.True(t, names[versionEntry], "the loader needs %s", versionEntry)
}

func TestEntryPointsResolve(t *testing.T) {
	requireDriver(t)
	lib, err := driver.library()
	require.NoError(t, err)
	entries := entryPoints()
	require.Len(t, lib.resolved, len(entries))
	for i, e := range entries {
		if e.required {
			assert.True(t, lib.resolved[i], "required %s (%s) not resolved", e.name, e.symbol)
		}
	}
}

func TestDriverVersion(t *testing.T) {
	requireDriver(t)
	v, err := DriverVersion()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, v, 10000, "expected a CUDA 10 or later driver")
	t.Logf("driver version %d", v)
}

func TestNoDevice(t *testing.T) {
	requireDriver(t)
	if n, err := DeviceCount(); err == nil {
		t.Skipf("this machine has %d GPU(s)", n)
	}
	n, err := DeviceCount()
	assert.Zero(t, n)
	assert.ErrorIs(t, err, ErrNoDevice)
	assert.ErrorIs(t, err, errs.ErrCUDA)
	assert.Equal(t, errs.ErrCUDA, errs.Class(err))
	var cerr *Error
	require.ErrorAs(t, err, &cerr)
	assert.Equal(t, "cuInit", cerr.Op)
	assert.Equal(t, codeNoDevice, cerr.Code)
	assert.Equal(t, "CUDA_ERROR_NO_DEVICE", cerr.Name)
	assert.NotEmpty(t, cerr.Message)

	_, err = GetDevice(0)
	assert.ErrorIs(t, err, ErrNoDevice)
	_, err = Device(0).Name()
	assert.ErrorIs(t, err, ErrNoDevice)
	_, err = Device(0).PCIBusID()
	assert.ErrorIs(t, err, ErrNoDevice)
	_, _, err = Device(0).ComputeCapability()
	assert.ErrorIs(t, err, ErrNoDevice)
	_, err = Device(0).MultiprocessorCount()
	assert.ErrorIs(t, err, ErrNoDevice)
}

func TestDriverNotFound(t *testing.T) {
	const path = "/nonexistent/libcuda.so.1"
	withLibrary(t, path)

	checkErr := func(t *testing.T, err error) {
		t.Helper()
		require.Error(t, err)
		assert.ErrorIs(t, err, ErrDriverNotFound)
		assert.ErrorIs(t, err, errs.ErrCUDA)
		assert.NotErrorIs(t, err, ErrNoDevice)
		assert.Contains(t, err.Error(), "CUDA driver not found: ")
		assert.Contains(t, err.Error(), path)
	}
	_, err := DriverVersion()
	checkErr(t, err)
	_, err = DeviceCount()
	checkErr(t, err)
	_, err = GetDevice(0)
	checkErr(t, err)
	_, err = Device(0).Name()
	checkErr(t, err)
	_, err = Device(0).PCIBusID()
	checkErr(t, err)
	_, _, err = Device(0).ComputeCapability()
	checkErr(t, err)
}

func TestNotADriver(t *testing.T) {
	// libc loads fine but has no cuDriverGetVersion.
	withLibrary(t, "libc.so.6")
	_, err := DeviceCount()
	require.Error(t, err)
	assert.ErrorIs(t, err, errs.ErrCUDA)
	assert.NotErrorIs(t, err, ErrDriverNotFound)
	assert.Contains(t, err.Error(), "not a CUDA driver")
}

func TestConcurrentFirstUse(t *testing.T) {
	requireDriver(t)
	driver = newLoader()
	const callers = 16
	results := make([]error, callers)
	counts := make([]int, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { counts[i], results[i] = DeviceCount() })
	}
	wg.Wait()
	for i := 1; i < callers; i++ {
		assert.Equal(t, counts[0], counts[i])
		assert.Equal(t, results[0], results[i], "every caller sees the one cached result")
	}
}

func TestResolveEntries(t *testing.T) {
	const driverVersion = 12020
	entries := []entryPoint{
		{name: "cuA", symbol: "cuA", required: true},
		{name: "cuB", symbol: "cuB_v2", required: false},                             // missing, optional
		{name: "cuC", symbol: "cuC", required: false, minVersion: driverVersion + 1}, // too new, optional
		{name: "cuD", symbol: "cuD", required: true, minVersion: driverVersion},
	}
	missing := map[string]bool{"cuB_v2": true}
	var looked []string
	lookup := func(i int) error {
		looked = append(looked, entries[i].symbol)
		if missing[entries[i].symbol] {
			return errors.New("undefined symbol")
		}
		return nil
	}

	resolved, err := resolveEntries(entries, driverVersion, lookup)
	require.NoError(t, err)
	assert.Equal(t, []bool{true, false, false, true}, resolved)
	assert.Equal(t, []string{"cuA", "cuB_v2", "cuD"}, looked, "an entry too new for the driver is not looked up")

	t.Run("required missing", func(t *testing.T) {
		missing["cuA"] = true
		defer delete(missing, "cuA")
		_, err := resolveEntries(entries, driverVersion, lookup)
		assert.ErrorIs(t, err, errs.ErrCUDA)
		assert.ErrorContains(t, err, "cuA")
		assert.ErrorContains(t, err, "undefined symbol")
	})
	t.Run("required too new", func(t *testing.T) {
		_, err := resolveEntries(entries, driverVersion-10, lookup)
		assert.ErrorIs(t, err, errs.ErrCUDA)
		assert.ErrorContains(t, err, "cuD needs driver version 12020 or later")
	})
}

func TestErrorMessage(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{&Error{Op: "cuMemAlloc", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Message: "out of memory"},
			"cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{&Error{Op: "cuInit", Code: 100, Name: "CUDA_ERROR_NO_DEVICE"}, "cuInit: CUDA_ERROR_NO_DEVICE (100)"},
		{&Error{Op: "cuFoo", Code: 12345}, "cuFoo: CUresult (12345)"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.err.Error())
		assert.ErrorIs(t, tc.err, errs.ErrCUDA)
		assert.Equal(t, tc.err.Code == codeNoDevice, errors.Is(tc.err, ErrNoDevice))
		wrapped := fmt.Errorf("context: %w", tc.err)
		assert.ErrorIs(t, wrapped, errs.ErrCUDA)
	}
}

// The tests below need GPUs; they run on the GPU host (go test -c, then the binary).

var pciBusID = regexp.MustCompile(`^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$`)

func TestDevices(t *testing.T) {
	requireGPU(t, 1)
	n, err := DeviceCount()
	require.NoError(t, err)
	seen := map[string]bool{}
	for i := range n {
		d, err := GetDevice(i)
		require.NoError(t, err)
		name, err := d.Name()
		require.NoError(t, err)
		assert.NotEmpty(t, name)
		id, err := d.PCIBusID()
		require.NoError(t, err)
		assert.Regexp(t, pciBusID, id)
		assert.False(t, seen[id], "two devices at %s", id)
		seen[id] = true
		major, minor, err := d.ComputeCapability()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, major, minComputeCapability)
		assert.GreaterOrEqual(t, minor, 0)
		sms, err := d.MultiprocessorCount()
		require.NoError(t, err)
		assert.Positive(t, sms)
		t.Logf("device %d: %s at %s, compute capability %d.%d, %d SMs", i, name, id, major, minor, sms)
	}
}

func TestGetDeviceOutOfRange(t *testing.T) {
	requireGPU(t, 1)
	n, err := DeviceCount()
	require.NoError(t, err)
	for _, ordinal := range []int{-1, n} {
		_, err := GetDevice(ordinal)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, "ordinal %d", ordinal)
	}
}
