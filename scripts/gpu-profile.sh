#!/usr/bin/env bash
# Runs on the GPU host: profiles one collective at one size with Nsight Compute, this library's
# kernels and NCCL's from the same run, and prints per kernel its mean time and HBM bytes per call.
#
#   make gpu-profile                                   # AllReduce of 1 GiB, every GPU
#   NP=4 OP=allgather BYTES=134217728 make gpu-profile
#   NP=4 REGISTERED=1 make gpu-profile                 # zero-copy paths (registered buffers)
#   CALLS=10 TIMEOUT=600 make gpu-profile             # timed calls per library (5), time limit in s (300)
#
# How, and why so: bench/profile_collective (built here against build/) runs the
# collective CALLS times after its warm-up, through this library and then through NCCL. Only
# rank 0 runs under ncu; the other ranks run free. The metrics are ones ncu collects in a single
# pass (kernel time, HBM bytes read and written). With the NVLink byte counters (nvltx/nvlrx)
# the run never returns, most likely because they need a second pass: ncu then replays the
# kernel, and a replayed collective kernel waits forever for peers that have moved on. Times
# under the profiler are the profiled rank's own kernel durations, without its host gaps; its
# peers run unslowed, so a kernel of a round-based collective may find them already ahead.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/gpu-env.sh

if [ ! -f "$build/lib/libmscclpp.so" ]; then
	echo "gpu-profile: $build/lib/libmscclpp.so is missing: run 'make gpu-bundle' where Go is, and bring build/ along"
	exit 2
fi
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
if [ -z "$ncu" ]; then
	echo "gpu-profile: ncu (Nsight Compute) not found"
	exit 2
fi
ngpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
np=${NP:-$ngpus}
op=${OP:-allreduce}
bytes=${BYTES:-1073741824}
calls=${CALLS:-5}
registered=${REGISTERED:+registered}
metrics=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum

out=$build/gpu-profile
mkdir -p "$out"
prog=$out/profile_collective
build_cuda bench/profile_collective/main.cu "$prog" || exit 1

csv=$out/$op-$bytes${registered:+-registered}-np$np.csv
wrapper=$out/ncu-rank0.sh
cat >"$wrapper" <<EOF
#!/usr/bin/env bash
# Rank 0 under ncu, the other ranks as they are.
[ "\$OMPI_COMM_WORLD_RANK" = 0 ] || exec "\$@"
exec "$ncu" --target-processes all --clock-control none --cache-control none \
	-k 'regex:mscclpp_|ncclDevKernel' --metrics $metrics --csv --print-units base --log-file "$csv" "\$@"
EOF
chmod +x "$wrapper"

echo "gpu-profile: $op of $bytes bytes${registered:+, registered}, $np ranks, $calls calls after the warm-up; ncu on rank 0"
timeout --kill-after=10 "${TIMEOUT:-300}" $mpirun -np "$np" "$wrapper" "$prog" "$op" "$bytes" "$calls" $registered nccl
rc=$?
[ $rc -eq 0 ] || { echo "gpu-profile: the run failed (exit $rc); ncu's log: $csv"; exit $rc; }

# The CSV has one row per kernel launch and metric; the warm-up launches come first for each
# library, so only the last $calls launches of each kernel are averaged.
python3 - "$csv" "$calls" <<'EOF'
import csv, sys
from collections import OrderedDict

path, calls = sys.argv[1], int(sys.argv[2])
launches = OrderedDict()  # kernel -> [ {metric: value} per launch ]
with open(path) as f:
    rows = csv.reader(line for line in f if line.startswith('"'))
    header = next(rows)
    col = {name: i for i, name in enumerate(header)}
    seen = {}
    for r in rows:
        kernel = r[col["Kernel Name"]].split("(")[0]
        key = (kernel, r[col["ID"]])
        if key not in seen:
            seen[key] = {}
            launches.setdefault(kernel, []).append(seen[key])
        seen[key][r[col["Metric Name"]]] = float(r[col["Metric Value"]].replace(",", ""))
print(f"{'kernel':48s} {'launches':>8s} {'us/call':>9s} {'HBM read MB':>12s} {'HBM write MB':>13s}")
for kernel, ls in launches.items():
    last = ls[-calls:]
    mean = lambda m: sum(l[m] for l in last) / len(last)
    print(f"{kernel:48s} {len(last):8d} {mean('gpu__time_duration.sum') / 1e3:9.1f} "
          f"{mean('dram__bytes_read.sum') / 1e6:12.1f} {mean('dram__bytes_write.sum') / 1e6:13.1f}")
EOF
