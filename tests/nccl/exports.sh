#!/usr/bin/env bash
# The NCCL layer's exports (make nccl-test):
#   - libmscclpp_nccl.so and lib/nccl/libnccl.so.2 define every function include/nccl.h declares
#     and every NCCL symbol PyTorch 2.11's libtorch_cuda.so imports;
#   - libmscclpp.so defines no nccl* or pnccl* symbol, so a program that links it next to the
#     real NCCL keeps the real NCCL.
#
#   tests/nccl/exports.sh BUILD
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:?build folder}"

# What `nm -D --undefined-only torch/lib/libtorch_cuda.so | grep nccl` lists for PyTorch 2.11.
pytorch="ncclAllGather ncclAllReduce ncclAlltoAll ncclBcast ncclBroadcast ncclCommAbort ncclCommCount
ncclCommDeregister ncclCommDestroy ncclCommFinalize ncclCommGetAsyncError ncclCommInitAll ncclCommInitRank
ncclCommInitRankConfig ncclCommInitRankScalable ncclCommRegister ncclCommShrink ncclCommSplit ncclCommUserRank
ncclCommWindowDeregister ncclCommWindowRegister ncclDevCommCreate ncclDevCommDestroy ncclGetErrorString
ncclGetLastError ncclGetUniqueId ncclGetVersion ncclGroupEnd ncclGroupSimulateEnd ncclGroupStart ncclMemAlloc
ncclMemFree ncclRecv ncclRedOpCreatePreMulSum ncclRedOpDestroy ncclReduce ncclReduceScatter ncclSend"

# Every function the header declares: a declaration line "type name(".
declared=$(grep -oE '^[A-Za-z_][A-Za-z0-9_ *]*[ *](p?nccl[A-Za-z0-9_]+)\(' "$root/include/nccl.h" |
  grep -oE 'p?nccl[A-Za-z0-9_]+\($' | tr -d '(' | sort -u)
[ "$(echo "$declared" | wc -l)" -ge 80 ] || { echo "tests/nccl/exports: found only $(echo "$declared" | wc -l) declarations in include/nccl.h"; exit 1; }

fail=0
for lib in "$build/lib/libmscclpp_nccl.so" "$build/lib/nccl/libnccl.so.2"; do
  defined=$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)
  missing=$(comm -23 <(printf '%s\n' $declared $pytorch | sort -u) <(echo "$defined"))
  if [ -n "$missing" ]; then
    echo "tests/nccl/exports: $lib lacks:" $missing
    fail=1
  fi
done
leaked=$(nm -D --defined-only "$build/lib/libmscclpp.so" | awk '{print $3}' | grep -E '^p?nccl' || true)
if [ -n "$leaked" ]; then
  echo "tests/nccl/exports: libmscclpp.so must export no NCCL name, but has:" $leaked
  fail=1
fi
[ "$fail" -eq 0 ] || exit 1
echo "tests/nccl/exports: $(echo "$declared" | wc -l) declared functions and PyTorch's $(echo $pytorch | wc -w) NCCL imports exported by both NCCL libraries; none by libmscclpp.so"
