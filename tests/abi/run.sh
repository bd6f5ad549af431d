#!/usr/bin/env bash
# Builds and runs the legacy ABI checks against include/ only:
#   legacy_abi_check.cpp  with g++ in C++11 and C++17 (compile-time asserts, then run);
#   legacy_device_check.cu with nvcc for sm_80 and sm_90 (compile only), when nvcc is on PATH.
# Exits non-zero on the first failure; prints one summary line at the end, preceded by the layout
# table when VERBOSE=1 or when the run fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
include="$root/include"
CXX="${CXX:-g++}"
NVCC="${NVCC:-nvcc}"

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT

passed=()
for std in c++11 c++17; do
  "$CXX" -std="$std" -Wall -Wextra -Werror -I"$include" "$here/legacy_abi_check.cpp" -o "$build/legacy_abi_check_$std"
  if ! table="$("$build/legacy_abi_check_$std")"; then
    echo "$table"
    echo "tests/abi: FAIL: legacy_abi_check ($std)" >&2
    exit 1
  fi
  if [[ "${VERBOSE:-0}" == 1 && "$std" == c++17 ]]; then
    echo "$table"
  fi
  passed+=("host/$std")
done

if command -v "$NVCC" >/dev/null 2>&1; then
  for arch in sm_80 sm_90; do
    "$NVCC" -arch="$arch" -I"$include" -c "$here/legacy_device_check.cu" -o "$build/legacy_device_check_$arch.o"
    passed+=("device/$arch")
  done
  # The FIFO push must be one 128-bit store, so the proxy never sees half a trigger.
  "$NVCC" -arch=sm_90 -I"$include" -ptx "$here/legacy_device_check.cu" -o "$build/legacy_device_check.ptx"
  grep -q 'st.volatile.global.v2.u64' "$build/legacy_device_check.ptx"
  passed+=("device/128-bit-store")
  device="device checked"
else
  device="device skipped (no $NVCC on PATH)"
fi

echo "tests/abi: ok: ${passed[*]}; $device"
