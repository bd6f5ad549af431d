// Package kernels holds the library's own GPU kernels: the CUDA sources under src/ and the PTX
// that nvcc makes of them under ptx/, embedded in the library so that nothing is loaded from
// disk at run time.
//
// The PTX is generated, and committed so that `go build` needs no CUDA compiler: `make kernels`
// regenerates it after an edit under src/, and `make test` fails when it is stale. A plain
// `go build` embeds the PTX, which the driver compiles for the GPU at the first load (tens of
// seconds for all modules, then cached in the driver's compute cache). Built with the
// mscclpp_sass tag, as make builds the library, the package embeds instead the fatbins that
// `make fatbins` makes of the PTX under fatbin/: the PTX, and for the large modules (the round
// kernels that reduce), which take the driver seconds each, machine code for sm_80 and sm_90
// (loaded in milliseconds); the others are left to the driver's compiler, newer than the
// toolkit's, whose code for the small-message kernels measured faster. ImageFormat says which
// this build holds.
//
// Every collective kernel takes one parameter, the coll::Args struct of src/common.cuh
// (mirrored by the collectives package); the point-to-point kernels (src/sendrecv.cu on lanes,
// src/sendrecv_ll128.cu in LL128 lines) take their own coll::P2PArgs, and the local scale kernel (src/scale.cu, NCCL's PreMulSum factor) its
// coll::ScaleArgs, with one entry point per element type. The kernels that reduce (AllReduce,
// ReduceScatter) have two entry points per element type: <prefix>_sum_<type suffix>, sum compiled
// in (the path that matters most; unsigned types sum with the signed type's, the same bits), and
// <prefix>_<type suffix>, every operator, read from the argument at run time (suffixes i8, u8,
// i32, u32, i64, u64, f16, bf16, f32, f64). Each operator compiled in would copy the whole kernel:
// with five operators and ten types that made the PTX 32 MB and the driver's first compile of the
// modules without machine code 31-33 s on an H100; as two entry points per type it was 13 MB and
// the first load takes 5.6-6.8 s there (driver cache off).
// Those that only move data (AllGather, Broadcast, Send/Recv) take a byte count, one entry point
// for every type.
package kernels
