#!/usr/bin/env bash
# Runs the bootstrap example under mpirun in both forms (unique id, then ip:port) and prints
# "N passed, M failed". Usage: run.sh BINARY NRANKS "MPIRUN [FLAGS]"
set -uo pipefail
bin=$1 np=$2 mpirun=$3
port=$((20000 + RANDOM % 20000))
passed=0 failed=0
for args in "" "127.0.0.1:$port"; do
	out=$(timeout 120 $mpirun -np "$np" "$bin" $args 2>&1)
	rc=$?
	if [ $rc -eq 0 ] && grep -q '^PASS bootstrap' <<<"$out"; then
		passed=$((passed + 1))
		grep '^PASS' <<<"$out"
	else
		failed=$((failed + 1))
		echo "FAIL: $bin $args (exit $rc):"
		echo "$out" | tail -30
	fi
done
echo "bootstrap example: $passed passed, $failed failed"
[ $failed -eq 0 ]
