#!/usr/bin/env bash
# Prepares a fresh Debian 12 machine to build and test libmscclpp (Go is assumed present).
# Non-interactive and idempotent: each step is skipped when what it provides is already there.
set -euo pipefail

need_pkgs=()
command -v nvcc >/dev/null 2>&1 || need_pkgs+=(nvidia-cuda-toolkit)
command -v mpicxx >/dev/null 2>&1 || need_pkgs+=(libopenmpi-dev openmpi-bin)
command -v g++ >/dev/null 2>&1 || need_pkgs+=(g++)
command -v pkg-config >/dev/null 2>&1 || need_pkgs+=(pkg-config)
# libfabric: headers to build the network transport (core/fabric), the library and its tools
# (fi_info, fi_pingpong) to test it on loopback.
[ -e /usr/include/rdma/fabric.h ] || need_pkgs+=(libfabric-dev)
command -v fi_pingpong >/dev/null 2>&1 || need_pkgs+=(libfabric-bin)

if [ ${#need_pkgs[@]} -eq 0 ]; then
	echo "deps: nvcc, mpicxx, g++, pkg-config and libfabric already present"
	exit 0
fi

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

# nvidia-cuda-toolkit lives in Debian's non-free component; add contrib and non-free if no source has them.
src=/etc/apt/sources.list.d/mscclpp-nonfree.sources
if ! grep -rqsE '^\s*Components:.*\bnon-free\b|^\s*deb .*\bnon-free\b' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "deps: adding Debian contrib/non-free components ($src)"
	$sudo tee "$src" >/dev/null <<'SRC'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
echo "deps: installing ${need_pkgs[*]}"
$sudo apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
echo "deps: done"
