// fill.ptx is generated from this file: nvcc -ptx -arch=compute_70 -o fill.ptx fill.cu
extern "C" __global__ void fill(unsigned int *p, unsigned int value, unsigned int n)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = value + i;
}

// fill's parameters in one struct, for launches of one parameter (LaunchKernelInContext).
struct fill_args {
	unsigned int *p;
	unsigned int value;
	unsigned int n;
};

extern "C" __global__ void fill_struct(const fill_args a)
{
	unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < a.n)
		a.p[i] = a.value + i;
}
