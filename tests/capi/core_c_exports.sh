#!/bin/sh
# Every function declared in include/mscclpp/core.h is exported by libmscclpp.so.
# Usage: core_c_exports.sh LIB HEADER
set -eu
lib=$1
header=$2
names=$(sed -n 's/^mscclppResult_t \(mscclpp[A-Za-z0-9_]*\)(.*/\1/p' "$header")
[ -n "$names" ] || { echo "core_c_exports: no functions found in $header"; exit 1; }
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}')
missing=0
count=0
for n in $names; do
	count=$((count + 1))
	if ! printf '%s\n' "$exported" | grep -qx "$n"; then
		echo "core_c_exports: $n is declared in $header but not exported by $lib"
		missing=$((missing + 1))
	fi
done
[ "$missing" -eq 0 ] || exit 1
echo "core_c_exports: all $count functions of $header are exported"
