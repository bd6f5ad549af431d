// Package kernels holds the library's own GPU kernels: the CUDA sources under src/ and the PTX
// that nvcc makes of them under ptx/, embedded in the library so that nothing is loaded from
// disk at run time. The driver compiles the PTX for the GPU it runs on (and caches the result
// in its compute cache) when a module is loaded.
//
// The PTX is generated, and committed so that `go build` needs no CUDA compiler: `make kernels`
// regenerates it after an edit under src/, and `make test` fails when it is stale.
//
// Every kernel takes one parameter, the coll::Args struct of src/common.cuh (mirrored by the
// collectives package). The kernels that reduce have one entry point per element type, named
// <prefix>_<type suffix> (f32, f16, bf16, i32, u32, f64).
package kernels
