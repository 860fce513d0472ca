#!/usr/bin/env bash
# Installs the Debian packages the peer benchmarks need (bench/peers/):
# redis-server + redis-tools (redis-benchmark), nats-server, and Go with the
# NATS Go client library to build the JetStream publisher (jspub.go); etcd
# (etcd-server, etcd-client for etcdctl, and the etcd 3.4 Go source with its
# clientv3 package to build the put load generator etcd_put.go).
# Idempotent: installs only what is missing. Never starts, stops or
# reconfigures a system service: the benchmarks run their own server
# processes. If this machine has no /usr/sbin/policy-rc.d, one that refuses
# every service start is put there for the duration of the install (so the
# packages' postinst scripts do not start redis-server or nats-server) and
# removed afterwards.
# Usage: bench/peers/install.sh [redis|nats|etcd|all]   (default all)
# Exit: 0 = installed (or already there), 77 = cannot install (reason on
# stderr), 2 = usage.
set -euo pipefail

what=${1:-all}
case "$what" in
    redis) pkgs=(redis-server redis-tools) ;;
    nats) pkgs=(nats-server golang-go golang-github-nats-io-go-nats-dev) ;;
    etcd) pkgs=(etcd-server etcd-client golang-go golang-etcd-server-dev) ;;
    all) pkgs=(redis-server redis-tools nats-server golang-go golang-github-nats-io-go-nats-dev
               etcd-server etcd-client golang-etcd-server-dev) ;;
    *) echo "install.sh: unknown peer '$what' (redis|nats|etcd|all)" >&2; exit 2 ;;
esac

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: missing packages: ${missing[*]}; run as root" >&2
    exit 77
fi
if ! command -v apt-get >/dev/null; then
    echo "install.sh: missing packages: ${missing[*]}; no apt-get on this machine" >&2
    exit 77
fi

policy=/usr/sbin/policy-rc.d
made_policy=
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    if [ -n "$made_policy" ]; then
        rm -f "$policy"
    fi
}
trap cleanup EXIT
if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# temporary, from vtop bench/peers/install.sh\nexit 101\n' >"$policy"
    chmod 755 "$policy"
    made_policy=1
fi

echo "install.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1 || true
    if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
        echo "install.sh: apt-get install ${missing[*]} failed" >&2
        exit 77
    fi
fi
