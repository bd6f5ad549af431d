#!/usr/bin/env bash
# Compares include/nccl.h with NVIDIA's nccl.h (NCCL 2.28.3 on the GPU host). For each header:
# the NCCL macro definitions (gcc -dM), the nccl identifiers it declares, and what header_agree.c
# prints when built against it as C11 and as C++17; then diffs the two. Where NVIDIA's
# nccl_device/core.h is there too, it also compares the device API's two host functions and
# compiles include/nccl.h together with core.h, in both orders.
#   NCCL_REAL_INCLUDE  folder of NVIDIA's nccl.h (default /usr/include)
#   CUDA_INCLUDE       CUDA headers (default /usr/local/cuda/include if present, else the defaults)
# Exits 0 when the headers agree, 1 with the diff when they do not, 77 without NVIDIA's nccl.h.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
CC="${CC:-gcc}"
CXX="${CXX:-g++}"

real_inc="${NCCL_REAL_INCLUDE:-/usr/include}"
if [[ ! -f "$real_inc/nccl.h" ]]; then
  echo "tests/nccl: header_agree skipped: no $real_inc/nccl.h"
  exit 77
fi
cuda_inc="${CUDA_INCLUDE:-}"
[[ -z "$cuda_inc" && -f /usr/local/cuda/include/cuda_runtime.h ]] && cuda_inc=/usr/local/cuda/include
cuda=()
[[ -n "$cuda_inc" ]] && cuda=(-isystem "$cuda_inc")

build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT

# NVIDIA's header gets a folder of its own, searched before all others (a CUDA include folder, or
# /usr/include next to ours, may hold another nccl.h).
mkdir "$build/real"
ln -s "$real_inc/nccl.h" "$build/real/nccl.h"
device=()
if [[ -f "$real_inc/nccl_device/core.h" ]]; then
  ln -s "$real_inc/nccl_device" "$build/real/nccl_device"
  device=(-DAGREE_DEVICE)
fi

# facts NAME DIR [FLAGS...]: writes $build/NAME.txt, all that is compared of DIR/nccl.h.
facts() {
  local name="$1" dir="$2"
  shift 2
  local flags=(-I"$dir" "${cuda[@]}" "${device[@]}" "$@")
  local used
  used="$("$CC" -std=c11 "${flags[@]}" -M "$here/header_agree.c" | tr -s ' \\' '\n\n' | grep -m1 '/nccl\.h$')"
  if [[ "$used" != "$dir/nccl.h" ]]; then
    echo "tests/nccl: FAIL: the $name build found $used, not $dir/nccl.h" >&2
    exit 1
  fi
  "$CC" -std=c11 "${flags[@]}" "$here/header_agree.c" -o "$build/$name-c"
  "$CXX" -std=c++17 -x c++ "${flags[@]}" "$here/header_agree.c" -o "$build/$name-c++"
  {
    echo '#include <nccl.h>' | "$CC" -std=c11 -E -dM "${flags[@]}" -x c - | grep -E '^#define (NCCL|nccl|pnccl)' | sort
    echo '#include <nccl.h>' | "$CXX" -std=c++17 -E -P "${flags[@]}" -x c++ - | grep -oE '\bp?nccl\w*' | sort -u |
      sed 's/^/identifier /'
    "$build/$name-c"
    "$build/$name-c++" | sed 's/^/c++ /'
  } > "$build/$name.txt"
}

facts nvidia "$build/real" ${device[@]:+-DAGREE_DEVICE_HEADER}
facts ours "$root/include"

# What include/nccl.h declares beyond NVIDIA's nccl.h: the device API's host functions (compared
# above through core.h when it is there) and, against a header older than 2.28.9, ncclCommRevoke.
extra='^identifier ncclDevComm'
notes=""
if ! grep -q REVOKE "$build/nvidia.txt"; then
  extra="$extra|Revoke|REVOKE"
  notes="; ncclCommRevoke and NCCL_REVOKE_DEFAULT are ours only (NCCL 2.28.9)"
fi
grep -vE "$extra" "$build/ours.txt" > "$build/ours-compared.txt" || true

if ! diff -u --label "NVIDIA $real_inc/nccl.h" --label include/nccl.h "$build/nvidia.txt" \
  "$build/ours-compared.txt"; then
  echo "tests/nccl: FAIL: include/nccl.h differs from $real_inc/nccl.h (diff above)" >&2
  exit 1
fi

if [[ ${#device[@]} -gt 0 ]]; then
  for headers in 'nccl.h nccl_device/core.h' 'nccl_device/core.h nccl.h'; do
    printf '#include <%s>\n' $headers |
      "$CXX" -std=c++17 -fsyntax-only -I"$root/include" -I"$build/real" "${cuda[@]}" -x c++ -
  done
  notes="$notes; device API agrees with nccl_device/core.h, which compiles with ours in either order"
else
  notes="$notes; device API not compared (no nccl_device/core.h)"
fi

version="$(grep -m1 '^#define NCCL_VERSION_CODE' "$build/nvidia.txt" | cut -d' ' -f3)"
lines="$(wc -l < "$build/nvidia.txt")"
echo "tests/nccl: header_agree ok: include/nccl.h agrees with $real_inc/nccl.h ($version) in $lines lines$notes"
