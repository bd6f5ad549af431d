// Package halfprec converts between float32 and the 16-bit floating types of the GPU, IEEE
// binary16 (float16, __half) and bfloat16 (__nv_bfloat16), as bit patterns: to float32 exactly,
// from float32 rounded to nearest, ties to even, as the CUDA conversions round. The collectives'
// reductions across hosts and the benchmark's data use it.
package halfprec
