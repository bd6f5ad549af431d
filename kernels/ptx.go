//go:build !mscclpp_sass

package kernels

import "embed"

// ImageFormat says what the modules' images are: "ptx" in a plain `go build`, which the driver
// compiles for the GPU at the first load (see the package comment).
const ImageFormat = "ptx"

//go:embed ptx/*.ptx
var images embed.FS

const imageDir = "ptx"
