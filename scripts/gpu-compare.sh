#!/usr/bin/env bash
# Runs on the GPU host (no Go needed): one mscclpp-bench sweep per forced algorithm, NCCL beside
# each, then one table of the times side by side (scripts/compare_runs.py). For the crossover and
# algorithm experiments of docs/PERFORMANCE.md.
#
#   OP=allreduce ALGOS="rsag_direct rsag_port" NP=4 scripts/gpu-compare.sh -b 64M -e 1G -R 1 -G 1
#
# OP: allreduce or allgather (default allreduce); ALGOS: values of MSCCLPP_ALLREDUCE_ALGO or
# MSCCLPP_ALLGATHER_ALGO (default "auto"); NP: ranks (default: every GPU); the arguments go to
# every sweep (default -b 1M -e 1G -f 2 -G 1). The JSON files land in build/gpu-compare/.
# DRY_RUN=1 prints the commands instead of running them.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh
op=${OP:-allreduce}
case "$op" in
allreduce) var=MSCCLPP_ALLREDUCE_ALGO ;;
allgather) var=MSCCLPP_ALLGATHER_ALGO ;;
*) echo "gpu-compare: OP=$op: want allreduce or allgather"; exit 2 ;;
esac
dry=${DRY_RUN:-0}
if [ "$dry" != 1 ]; then
	[ -x "$build/bin/mscclpp-bench" ] || { echo "gpu-compare: run 'make gpu-bundle' where Go is first"; exit 2; }
	np=${NP:-$(nvidia-smi -L | grep -c '^GPU')}
else
	np=${NP:-2}
fi
mpirun="$mpirun -x $var"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(-b 1M -e 1G -f 2 -G 1)
out=$build/gpu-compare
mkdir -p "$out"
files=()
status=0
for algo in ${ALGOS:-auto}; do
	json=$out/$op-${np}gpu-$algo.json
	cmd="env $var=$algo timeout --kill-after=10 300 $mpirun -np $np $build/bin/mscclpp-bench -op $op -w 5 -n 30 --compare-nccl --json $json ${args[*]}"
	echo "==== $op, $var=$algo, $np ranks, ${args[*]} $(date -u +%FT%TZ)"
	if [ "$dry" = 1 ]; then
		echo $cmd
		continue
	fi
	if $cmd; then files+=("$algo=$json"); else status=1; fi
done
if [ ${#files[@]} -gt 0 ]; then
	python3 scripts/compare_runs.py "${files[@]}"
	python3 scripts/compare_runs.py --in-place "${files[@]}"
fi
exit $status
