# gpu-env.sh: what the scripts that run on the GPU host share (gpu-test, gpu-bench, gpu-compare,
# gpu-profile). Sourced from the repository root: sets $build, the CUDA and library paths, $mpirun
# and build_cuda.

# NVLink multicast can take a host's GPUs out of service: keep it off everywhere, always.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

build=$(pwd)/build

# A bundle carried packed (make gpu-pack) is unpacked into build/ the first time.
if [ ! -f "$build/lib/libmscclpp.so" ] && [ -f gpu/bundle.tar.xz ]; then
	echo "unpacking gpu/bundle.tar.xz into $build"
	mkdir -p "$build" && tar -xJf gpu/bundle.tar.xz -C "$build"
fi
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# mpirun on this one host, passing the variables above to every rank; scripts append their own
# -x options.
mpirun="mpirun --allow-run-as-root --bind-to none --mca pml ob1 --mca btl self,vader
	--mca btl_vader_single_copy_mechanism none -x NCCL_NVLS_ENABLE -x TORCH_SYMM_MEM_DISABLE_MULTICAST
	-x NVSHMEM_DISABLE_NVLS -x LD_LIBRARY_PATH"

# build_cuda SRC OUT: compiles a CUDA program against build/ (and MPI, for those that use it).
build_cuda() {
	nvcc -std=c++17 -O2 -arch=sm_90 -I"$build/include" $(mpicxx --showme:compile) -DOMPI_SKIP_MPICXX "$1" \
		-o "$2" -L"$build/lib" -lmscclpp -Xlinker "-rpath,$build/lib" \
		-Xlinker "$(mpicxx --showme:link | sed 's/ /,/g')" 2>&1
}

# build_nccl SRC OUT FLAGS...: compiles an NCCL program with MPI; FLAGS say which nccl.h and which
# library (the host's NCCL, or include/nccl.h and -lmscclpp_nccl).
build_nccl() {
	local src=$1 out=$2
	shift 2
	nvcc -std=c++17 -O2 -arch=sm_90 $(mpicxx --showme:compile) -DOMPI_SKIP_MPICXX "$src" -o "$out" "$@" \
		-Xlinker "$(mpicxx --showme:link | sed 's/ /,/g')" 2>&1
}
