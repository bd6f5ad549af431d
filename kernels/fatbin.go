//go:build mscclpp_sass

package kernels

import "embed"

// ImageFormat says what the modules' images are: "fatbin" when built with the mscclpp_sass tag
// (as `make` builds the library): made by `make fatbins` from ptx/ into fatbin/ (not committed),
// each one holds the PTX, and those of the modules the driver takes seconds to compile machine
// code for sm_80 and sm_90 too (the Makefile's KERNEL_SASS).
const ImageFormat = "fatbin"

//go:embed fatbin/*.fatbin
var images embed.FS

const imageDir = "fatbin"
