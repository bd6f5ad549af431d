#!/usr/bin/env bash
# Runs on the GPU host (no Go needed): builds the benchmark programs bench/bench_*/main.cu
# against the prebuilt build/ and runs each with one rank per GPU. Extra arguments go to every
# benchmark. Results are printed; docs/PERFORMANCE.md records them by hand with date and device.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
export MSCCLPP_DEBUG=${MSCCLPP_DEBUG:-WARN}
[ -f "$build/lib/libmscclpp.so" ] || { echo "gpu-bench: run 'make gpu-bundle' where Go is first"; exit 2; }
np=${NP:-$(nvidia-smi -L | grep -c '^GPU')}
mpirun="$mpirun -x MSCCLPP_DEBUG"
mkdir -p "$build/gpu-bench"
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
status=0
for src in bench/bench_*/main.cu; do
	name=$(basename "$(dirname "$src")")
	build_cuda "$src" "$build/gpu-bench/$name" || { status=1; continue; }
	echo "==== $name ($np ranks) $(date -u +%FT%TZ)"
	timeout --kill-after=10 500 $mpirun -np "$np" "$build/gpu-bench/$name" "$@" || status=1
done
# The collective benchmark (a Go program built by `make tools`), when present: the library's
# collectives next to NCCL's, with direct calls and with CUDA graphs.
if [ -x "$build/bin/mscclpp-bench" ]; then
	for coll in allreduce allgather; do
		for graph in 0 1; do
			echo "==== mscclpp-bench -op $coll --compare-nccl -G $graph ($np ranks) $(date -u +%FT%TZ)"
			timeout --kill-after=10 300 $mpirun -np "$np" \
				"$build/bin/mscclpp-bench" -op "$coll" -b 8 -e 1G -f 2 -w 5 -n 30 --compare-nccl -G "$graph" \
				--json "$build/gpu-bench/$coll-G$graph.json" --plot "$build/gpu-bench/$coll-G$graph.png" || status=1
		done
	done
fi
exit $status
