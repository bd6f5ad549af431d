#!/usr/bin/env bash
# Checks include/nccl.h against NCCL 2.28.3's ABI, against include/ only:
#   layout_check.c as C11 (gcc), C++11 and C++17 (g++), and as CUDA C++ (nvcc, when on PATH),
#   all with warnings as errors; each build is run, and prints its table on failure (or VERBOSE=1);
#   ncclResetDebugInit still warns as deprecated, in C and C++.
# The CUDA headers come from CUDA_INCLUDE, else /usr/local/cuda/include, else the default paths.
# Exits non-zero on the first failure; prints one summary line at the end.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"
NVCC="${NVCC:-nvcc}"

cuda_inc="${CUDA_INCLUDE:-}"
[[ -z "$cuda_inc" && -f /usr/local/cuda/include/cuda_runtime.h ]] && cuda_inc=/usr/local/cuda/include
inc=(-I"$root/include")
[[ -n "$cuda_inc" ]] && inc+=(-isystem "$cuda_inc")

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT

# run NAME: runs the build NAME, printing its table when VERBOSE=1 or when it fails.
run() {
  local table
  if ! table="$("$build/$1")"; then
    echo "$table"
    echo "tests/nccl: FAIL: layout_check ($1)" >&2
    exit 1
  fi
  if [[ "${VERBOSE:-0}" == 1 ]]; then echo "$table"; fi
  passed+=("$1")
}

passed=()
"$CC" -std=c11 -Wall -Wextra -Wpedantic -Wstrict-prototypes -Werror "${inc[@]}" "$here/layout_check.c" -o "$build/c11"
run c11
for std in c++11 c++17; do
  "$CXX" -std="$std" -Wall -Wextra -Wpedantic -Werror -x c++ "${inc[@]}" "$here/layout_check.c" -o "$build/$std"
  run "$std"
done

# The deprecation must reach callers: a call with -Werror=deprecated-declarations must not build.
printf '#include <nccl.h>\nvoid f(void) { ncclResetDebugInit(); }\n' > "$build/deprecated.c"
for compiler in "$CC -std=c11" "$CXX -std=c++17 -x c++"; do
  if $compiler -Werror=deprecated-declarations "${inc[@]}" -c "$build/deprecated.c" -o "$build/deprecated.o" \
    2>/dev/null; then
    echo "tests/nccl: FAIL: ncclResetDebugInit is not deprecated ($compiler)" >&2
    exit 1
  fi
done
passed+=("deprecated")

if command -v "$NVCC" >/dev/null 2>&1; then
  "$NVCC" -x cu -std=c++17 -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror "${inc[@]}" \
    "$here/layout_check.c" -o "$build/nvcc"
  run nvcc
  device="nvcc checked"
else
  device="nvcc skipped (no $NVCC on PATH)"
fi

echo "tests/nccl: layout ok: ${passed[*]}; $device"
