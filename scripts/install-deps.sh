#!/usr/bin/env bash
# Installs every Debian package vtop needs to build, test and demo.
# Idempotent: installs only what is missing. Run as root on Debian 12.
set -euo pipefail

pkgs=(
    build-essential cmake pkg-config git
    libck-dev android-libboringssl-dev libjemalloc-dev libyaml-dev
    libcmocka-dev libraft-dev libuv1-dev openssl
    clang libclang-rt-14-dev curl procps
    librsvg2-bin libxml2-utils prometheus
    iptables util-linux shellcheck
)

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}; run as root" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
