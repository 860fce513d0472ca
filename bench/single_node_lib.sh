# Shared by the bench scripts that run one standalone vtop-node (source it;
# it defines names and functions and runs nothing).
# shellcheck shell=bash disable=SC2034  # the names are the sourcing script's

# The identities bench configs use (certificates from scripts/gen-certs.sh).
node_cn=00000000-0000-4000-8000-000000000001
client_cn=11111111-1111-4111-8111-111111111111
cluster=6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71

# bench_certs TOP DIR: the dev CA and certificates into DIR, or exit 1.
bench_certs() {
    "$1/scripts/gen-certs.sh" "$2" >/dev/null || { echo "gen-certs.sh failed" >&2; exit 1; }
}

# settle: syncs, waits (up to 90 s) for the 1-minute load average to drop
# below 1.5, and prints the load it ended at.
settle() {
    local _
    sync
    for _ in $(seq 1 90); do
        awk '{exit !($1 < 1.5)}' /proc/loadavg && break
        sleep 1
    done
    cut -d' ' -f1 /proc/loadavg
}
