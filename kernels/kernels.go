package kernels

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Module is one source file of src/, compiled.
type Module struct {
	Name  string // the source file's name without .cu, e.g. "allreduce_packet"
	Image []byte // what cuModuleLoadData takes: PTX text, or a fatbin (see ImageFormat)
}

// Modules returns every embedded module, sorted by name.
func Modules() ([]Module, error) {
	entries, err := fs.ReadDir(images, imageDir)
	if err != nil {
		return nil, fmt.Errorf("embedded kernels: %w", err)
	}
	var mods []Module
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), "."+ImageFormat)
		if !ok {
			continue
		}
		b, err := images.ReadFile(path.Join(imageDir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("embedded kernels: %w", err)
		}
		mods = append(mods, Module{Name: name, Image: b})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Name < mods[j].Name })
	return mods, nil
}
