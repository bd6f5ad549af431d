//go:build mscclpp_sass

package kernels

import "embed"

// ImageFormat says what the modules' images are: "fatbin" when built with the mscclpp_sass tag,
// as `make` builds the library. `make fatbins` makes them from ptx/ into fatbin/ (not committed).
// Each holds its module's PTX; the modules that take the driver seconds to compile (the
// Makefile's KERNEL_SASS) also hold machine code for sm_80 and sm_90.
const ImageFormat = "fatbin"

//go:embed fatbin/*.fatbin
var images embed.FS

const imageDir = "fatbin"
