#!/usr/bin/env bash
# Install what esv needs on Debian 12 (only what is missing), then build.
# Usage: tools/setup.sh [BUILDDIR [meson options...]]
set -euo pipefail
cd "$(dirname "$0")/.."

pkgs=(build-essential pkg-config meson ninja-build libbsd-dev libmd-dev libinih-dev
      libjansson-dev libcmocka-dev libmicrohttpd-dev runit iproute2 procps
      python3-torch curl wrk prometheus clang libclang-rt-14-dev
      etcd-server etcd-client libcurl4-openssl-dev openssl s6 systemd
      munge slurmctld slurmd slurm-client nftables)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	echo "setup: installing ${missing[*]}" >&2
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

builddir=${1:-build}
shift || true
if [ ! -f "$builddir/build.ninja" ]; then
	meson setup "$builddir" "$@" >/dev/null
fi
ninja -C "$builddir" >/dev/null
echo "setup: built in $builddir" >&2
