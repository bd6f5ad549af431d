#!/usr/bin/env bash
# The NCCL layer's CPU checks (make nccl-test): builds the fake libnccl.so.2 (fake_nccl.c), the
# fake native side (fake_native.c) and routing.c against build/, then runs routing.c under mpirun
# in each of its modes, with the fake as the real NCCL (MSCCLPP_NCCL_LIB_PATH), and for the
# native modes the fake native side in place of the GPU.
#
#   tests/nccl/routing.sh BUILD NP "MPIRUN [FLAGS]"
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$(cd "${1:?build folder}" && pwd)"
np="${2:-2}"
mpirun="${3:-mpirun}"
CC="${CC:-cc}"
MPICC="${MPICC:-mpicc}"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

"$CC" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -I"$root/include" \
  -Wl,-soname,libnccl.so.2 "$here/fake_nccl.c" -o "$tmp/libnccl.so.2"
"$CC" -std=c11 -O2 -Wall -Wextra -Werror -fPIC -shared -fvisibility=hidden -I"$root/include" \
  "$here/fake_native.c" -o "$tmp/fake_native.so"
# routing: linked with the layer. routing_nccl: linked with "libnccl.so.2" (the fake, in its own
# folder, found through LD_LIBRARY_PATH), as an NCCL program is.
cflags=(-std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$root/include")
"$MPICC" "${cflags[@]}" "$here/routing.c" -o "$tmp/routing" -L"$build/lib" -Wl,-rpath,"$build/lib" -lmscclpp_nccl -ldl
mkdir -p "$tmp/fake"
cp "$tmp/libnccl.so.2" "$tmp/fake/"
ln -s libnccl.so.2 "$tmp/fake/libnccl.so"
"$MPICC" "${cflags[@]}" "$here/routing.c" -o "$tmp/routing_nccl" -L"$tmp/fake" -lnccl -ldl

fake="$tmp/libnccl.so.2"
export MSCCLPP_DEBUG="${MSCCLPP_DEBUG:-WARN}"
# run MODE VAR=VALUE...: one mode of routing.c, with the variables set for every rank.
run() {
  local mode=$1
  shift
  echo "---- routing $mode ($*)"
  env "$@" $mpirun -np "$np" -x MSCCLPP_DEBUG -x MSCCLPP_NCCL_LIB_PATH -x MSCCLPP_NCCL_FALLBACK "$tmp/routing" "$mode"
}
# The NCCL program, its libnccl.so.2 replaced as users do: LD_PRELOAD (the real one stays loaded
# and the layer finds it there), or the layer's libnccl.so.2 first on LD_LIBRARY_PATH (the layer
# finds the real one further down the path). Only mpirun's ranks get the variables.
echo "---- routing fallback, NCCL program under LD_PRELOAD"
$mpirun -np "$np" -x MSCCLPP_DEBUG -x LD_LIBRARY_PATH="$tmp/fake" -x LD_PRELOAD="$build/lib/libmscclpp_nccl.so" \
  "$tmp/routing_nccl" fallback
echo "---- routing fallback, NCCL program with the layer's libnccl.so.2 first on LD_LIBRARY_PATH"
$mpirun -np "$np" -x MSCCLPP_DEBUG -x LD_LIBRARY_PATH="$build/lib/nccl:$tmp/fake" "$tmp/routing_nccl" fallback
# Without the layer the same program must fail the checks (so they do tell the two apart).
echo "---- routing fallback, NCCL program on the fake alone (must fail)"
if $mpirun -np "$np" -x MSCCLPP_DEBUG -x LD_LIBRARY_PATH="$tmp/fake" "$tmp/routing_nccl" fallback >"$tmp/alone.log" 2>&1; then
  cat "$tmp/alone.log"
  echo "tests/nccl/routing: FAIL: the checks passed without the layer"
  exit 1
fi
grep -h 'tests/nccl/routing' "$tmp/alone.log" || true
run fallback MSCCLPP_NCCL_LIB_PATH="$fake" MSCCLPP_NCCL_FALLBACK=auto
run off MSCCLPP_NCCL_LIB_PATH="$fake" MSCCLPP_NCCL_FALLBACK=off
run missing MSCCLPP_NCCL_LIB_PATH="$tmp/no-such-libnccl.so.2" MSCCLPP_NCCL_FALLBACK=
run badenv MSCCLPP_NCCL_LIB_PATH="$fake" MSCCLPP_NCCL_FALLBACK=allreduce,bogus
# The native side stood in for by fake_native.c: preloaded in place of the library's collective
# calls, and the CUDA driver of the layer's staging buffer.
native=$tmp/fake_native.so
run_native() {
  local mode=$1
  shift
  echo "---- routing $mode ($*)"
  env "$@" $mpirun -np "$np" -x MSCCLPP_DEBUG -x MSCCLPP_NCCL_LIB_PATH="$fake" -x MSCCLPP_NCCL_FALLBACK \
    -x LD_PRELOAD="$native" -x MSCCLPP_CUDA_LIBRARY="$native" "$tmp/routing" "$mode"
}
run_native native MSCCLPP_NCCL_FALLBACK=auto
run_native native-all MSCCLPP_NCCL_FALLBACK=all
run_native native-list MSCCLPP_NCCL_FALLBACK=reducescatter
run_native native-off MSCCLPP_NCCL_FALLBACK=off
echo "tests/nccl/routing: all modes passed"
