// fill.ptx is generated from this file: nvcc -ptx -arch=compute_70 -o fill.ptx fill.cu
extern "C" __global__ void fill(unsigned int *p, unsigned int value, unsigned int n)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = value + i;
}
