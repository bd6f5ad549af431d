#!/usr/bin/env bash
# Builds and runs the ABI checks against include/ only:
#   legacy_abi_check.cpp    with g++ in C++11 and C++17 (compile-time asserts, then run);
#   channels_abi_check.cpp  the device handle headers as plain C++11 and C++17 (asserts, then run);
#   channels_abi_check.c    the same headers as C11 (asserts, then run);
#   legacy_device_check.cu and channels_device_check.cu with nvcc for sm_80 and sm_90 (compile
#   only), and the PTX instructions the memory-ordering contracts rely on, when nvcc is on PATH.
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

for std in c++11 c++17; do
  "$CXX" -std="$std" -Wall -Wextra -Werror -pedantic -I"$include" "$here/channels_abi_check.cpp" \
    -o "$build/channels_abi_check_$std"
  if ! table="$("$build/channels_abi_check_$std")"; then
    echo "$table"
    echo "tests/abi: FAIL: channels_abi_check ($std)" >&2
    exit 1
  fi
  if [[ "${VERBOSE:-0}" == 1 && "$std" == c++17 ]]; then
    echo "$table"
  fi
  passed+=("channels-host/$std")
done

CC="${CC:-gcc}"
"$CC" -std=c11 -Wall -Wextra -Werror -pedantic -I"$include" "$here/channels_abi_check.c" -o "$build/channels_abi_check_c11"
if ! "$build/channels_abi_check_c11"; then
  echo "tests/abi: FAIL: channels_abi_check (c11)" >&2
  exit 1
fi
passed+=("channels-host/c11")

if command -v "$NVCC" >/dev/null 2>&1; then
  for arch in sm_80 sm_90; do
    "$NVCC" -arch="$arch" -I"$include" -c "$here/legacy_device_check.cu" -o "$build/legacy_device_check_$arch.o"
    passed+=("device/$arch")
  done
  # The FIFO push must be one 128-bit store, so the proxy never sees half a trigger.
  "$NVCC" -arch=sm_90 -I"$include" -ptx "$here/legacy_device_check.cu" -o "$build/legacy_device_check.ptx"
  grep -q 'st.volatile.global.v2.u64' "$build/legacy_device_check.ptx"
  passed+=("device/128-bit-store")
  for arch in sm_80 sm_90; do
    "$NVCC" -std=c++17 -arch="$arch" -I"$include" -c "$here/channels_device_check.cu" \
      -o "$build/channels_device_check_$arch.o"
    passed+=("channels-device/$arch")
  done
  # What the headers' memory-ordering comments promise, as PTX: one 128-bit trigger/LL16 store and
  # load, one 64-bit LL8 store, acquire/release/relaxed system-scope accesses, the release fence
  # before a trigger, and 16-byte vectors in memory-channel copies.
  "$NVCC" -std=c++17 -arch=sm_90 -I"$include" -ptx "$here/channels_device_check.cu" -o "$build/channels_device_check.ptx"
  for insn in 'st.volatile.global.v2.u64' 'ld.volatile.global.v2.u64' 'st.volatile.global.u64' 'ld.acquire.sys' \
    'st.release.sys' 'st.relaxed.sys' 'ld.relaxed.sys' 'fence.acq_rel.sys' 'st.global.v4.u32'; do
    if ! grep -q "$insn" "$build/channels_device_check.ptx"; then
      echo "tests/abi: FAIL: channels_device_check.ptx has no $insn" >&2
      exit 1
    fi
  done
  passed+=("channels-device/ptx")
  device="device checked"
else
  device="device skipped (no $NVCC on PATH)"
fi

echo "tests/abi: ok: ${passed[*]}; $device"
