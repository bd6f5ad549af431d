package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

//go:embed ptx/*.ptx
var ptx embed.FS

// Module is the PTX of one source file of src/.
type Module struct {
	Name string // the source file's name without .cu, e.g. "allreduce_packet"
	PTX  []byte
}

// Modules returns every embedded module, sorted by name.
func Modules() ([]Module, error) {
	entries, err := fs.ReadDir(ptx, "ptx")
	if err != nil {
		return nil, fmt.Errorf("embedded kernels: %w", err)
	}
	var mods []Module
	for _, e := range entries {
		b, err := ptx.ReadFile(path.Join("ptx", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("embedded kernels: %w", err)
		}
		mods = append(mods, Module{Name: strings.TrimSuffix(e.Name(), ".ptx"), PTX: b})
	}
	sort.Slice(mods, func(i, j int) bool { return mods[i].Name < mods[j].Name })
	return mods, nil
}
