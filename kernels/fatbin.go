//go:build mscclpp_sass

package kernels

import "embed"

// ImageFormat says what the modules' images are: "fatbin" when built with the mscclpp_sass tag
// (as `make` builds the library), each one machine code for sm_80 and sm_90 and the PTX for
// other GPUs, made by `make fatbins` from ptx/ into fatbin/ (not committed).
const ImageFormat = "fatbin"

//go:embed fatbin/*.fatbin
var images embed.FS

const imageDir = "fatbin"
