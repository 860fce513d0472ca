# Shell helpers shared by the scripts in bench/peers/ (sourced, not run):
# picking a free loopback port, waiting for the machine to quieten down,
# waiting for a server to listen, and stopping a process we started by PID.
# Owns no state beyond the variables the caller passes in.
# shellcheck shell=bash

# free_port: prints a TCP port in 20000..59999 that nothing listens on now.
free_port() {
    local used p
    used=$(ss -Htln 2>/dev/null | awk '{n = split($4, a, ":"); print a[n]}')
    for _ in $(seq 1 200); do
        p=$((20000 + RANDOM % 40000))
        grep -qx "$p" <<<"$used" || { echo "$p"; return 0; }
    done
    echo "free_port: no free port found" >&2
    return 1
}

# load1: the 1-minute load average.
load1() {
    cut -d' ' -f1 /proc/loadavg
}

# wait_quiet MAX_LOAD TIMEOUT_S: waits until the 1-minute load average is
# below MAX_LOAD or TIMEOUT_S seconds have passed; prints the load it ended
# with. Never fails: on a shared machine the caller records the load.
wait_quiet() {
    local max=$1 timeout=$2 waited=0
    while awk -v l="$(load1)" -v m="$max" 'BEGIN { exit !(l >= m) }' && [ "$waited" -lt "$timeout" ]; do
        sleep 5
        waited=$((waited + 5))
    done
    load1
}

# wait_listen HOST PORT PID SECONDS: waits until HOST:PORT accepts TCP
# connections; fails if PID exits first or SECONDS pass.
wait_listen() {
    local host=$1 port=$2 pid=$3 n=$(($4 * 10))
    for _ in $(seq 1 "$n"); do
        if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || return 1
        sleep 0.1
    done
    return 1
}

# stop_pid PID: SIGTERM, wait up to 10 s, then SIGKILL; only this PID.
stop_pid() {
    local pid=$1
    [ -n "$pid" ] || return 0
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null || true; return 0; }
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

# proc_cpu_s PID: user + system CPU seconds PID has used so far.
proc_cpu_s() {
    local hz
    hz=$(getconf CLK_TCK)
    sed 's/^.*) //' "/proc/$1/stat" | awk -v hz="$hz" '{ printf "%.2f", ($12 + $13) / hz }'
}
