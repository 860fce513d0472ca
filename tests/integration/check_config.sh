#!/usr/bin/env bash
# vtop-node refuses, before anything starts, configs that cannot work: the
# same checks for --check-config and --config (exit 2, the message names
# file:line and key), among them the three wrong identities that used to
# start and report ready (a certificate whose CN is not node_uuid, an expired
# one, one signed by another CA). A node with an empty authorization list
# starts and says so; relative paths follow the config file. Processes are
# stopped by PID. Exit 0 pass, 1 fail, 77 skip.
set -uo pipefail
node=${1:?usage: check_config.sh path/to/vtop-node SOURCE_DIR}
top=${2:?usage: check_config.sh path/to/vtop-node SOURCE_DIR}
command -v openssl >/dev/null || { echo "SKIP: openssl not installed"; exit 77; }

work=$(mktemp -d /tmp/vtop-check-config.XXXXXX)
pids=()
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
    for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

N1=00000000-0000-4000-8000-000000000001
N2=00000000-0000-4000-8000-000000000002
C1=11111111-1111-4111-8111-111111111111 # gen-certs' first client CN (expired, other-ca, future)
"$top/scripts/gen-certs.sh" "$work/certs" >/dev/null || fail "gen-certs"
C=$work/certs

# node_cfg FILE UUID CERT [EXTRA]: node_uuid on line 2, data_dir on 4, tls on 6, native on 7.
node_cfg() {
    cat >"$1" <<YAML
node_id: 1
node_uuid: $2
cluster_id: 6f1c2a4e-0d7b-4c1e-9a53-3c2f8e1d0b71
data_dir: $work/data
observability: {listen: 127.0.0.1:0}
tls: {ca: $C/ca.pem, cert: $C/$3.pem, key: $C/$3.key}
native: {listen: 127.0.0.1:0}
runtime: {cores: 1, pin: false}
authorization: {producers: [$C1], consumers: [$C1], admins: [$C1]}
${4:-}
YAML
}

# refused NAME PATTERN [ENV...]: both --check-config and --config exit 2 with PATTERN on
# stderr, and --config never reports ready.
refused() {
    local name=$1 pattern=$2 out rc
    shift 2
    out=$(env "$@" "$node" --check-config "$work/$name.yaml" 2>&1)
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name: --check-config exit $rc, want 2 ($out)"
    printf '%s\n' "$out" | grep -qE -- "$pattern" || fail "$name: '$out' does not match '$pattern'"
    env "$@" "$node" --config "$work/$name.yaml" >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    [ "$rc" -eq 2 ] || fail "$name: --config exit $rc, want 2 ($(cat "$work/$name.err"))"
    grep -q '^node_ready' "$work/$name.out" && fail "$name: the node reported ready"
    grep -qE -- "$pattern" "$work/$name.err" || fail "$name: start-up message '$(cat "$work/$name.err")'"
    [ -e "$work/data" ] && fail "$name: data_dir was created before the checks"
    return 0
}

# --- the three wrong identities ----------------------------------------------
node_cfg "$work/cn.yaml" "$N1" "$N2"
refused cn "cn\.yaml:6: key 'tls\.cert': certificate .*$N2\.pem has CN \"$N2\", but node_uuid \(line 2\) is $N1"
node_cfg "$work/expired.yaml" "$C1" expired
refused expired "expired\.yaml:6: key 'tls\.cert': certificate .*expired\.pem .* expired at Jan  2 00:00:00 2020 GMT"
node_cfg "$work/otherca.yaml" "$C1" other-ca/client
refused otherca "otherca\.yaml:6: key 'tls\.cert': certificate .*other-ca/client\.pem .*is not signed by the CA in .*ca\.pem"

# --- the other tls faults -------------------------------------------------------
node_cfg "$work/future.yaml" "$C1" future
refused future "future\.yaml:6: key 'tls\.cert': .*is not valid before Jan  1 00:00:00 2099 GMT"
node_cfg "$work/missing.yaml" "$N1" nope
refused missing "missing\.yaml:6: key 'tls\.cert': certificate file .*nope\.pem does not exist"
node_cfg "$work/mismatch.yaml" "$N1" "$N1"
sed -i "s#key: $C/$N1.key#key: $C/$N2.key#" "$work/mismatch.yaml"
refused mismatch "mismatch\.yaml:6: key 'tls\.key': private key .*$N2\.key is not the key of the certificate"
printf 'not PEM\n' >"$work/junk.pem"
node_cfg "$work/notpem.yaml" "$N1" "$N1"
sed -i "s#ca: $C/ca.pem#ca: junk.pem#" "$work/notpem.yaml"
refused notpem "notpem\.yaml:6: key 'tls\.ca': CA file $work/junk\.pem holds no PEM certificate"

# --- data directories -------------------------------------------------------------
: >"$work/plain"
node_cfg "$work/dirfile.yaml" "$N1" "$N1"
sed -i "s#data_dir: .*#data_dir: $work/plain#" "$work/dirfile.yaml"
refused dirfile "dirfile\.yaml:4: key 'data_dir': $work/plain is a regular file, not a directory"
node_cfg "$work/proc.yaml" "$N1" "$N1"
sed -i "s#data_dir: .*#data_dir: /proc/vtop-data#" "$work/proc.yaml"
refused proc "proc\.yaml:4: key 'data_dir': /proc/vtop-data is under /proc"

# --- listeners: numeric hosts, no clashes --------------------------------------------
node_cfg "$work/localhost.yaml" "$N1" "$N1"
sed -i "s#native: {listen: 127.0.0.1:0}#native: {listen: 'localhost:9092'}#" "$work/localhost.yaml"
refused localhost "localhost\.yaml:7: key 'native': listen host 'localhost' must be a numeric IPv4/IPv6 address \(listener addresses are numeric-only"
node_cfg "$work/clash.yaml" "$N1" "$N1" "replication: {listen: 127.0.0.1:7101}
meta: {id: 1, listen: 127.0.0.1:7200, admin_listen: 127.0.0.1:7101, tls: {ca: $C/ca.pem, cert: $C/1.pem, key: $C/1.key}}"
refused clash "clash\.yaml:11: node config: meta\.admin_listen 127\.0\.0\.1:7101 is already used by another listener \(replication\.listen, line 10\)"

# --- the log environment -----------------------------------------------------------
node_cfg "$work/good.yaml" "$N1" "$N1"
refused good "VTOP_LOG_LEVEL='loud' is not a log level: use one of debug, info, warn, error" VTOP_LOG_LEVEL=loud
refused good "VTOP_LOG_FORMAT='yaml' is not a log format: use text or json" VTOP_LOG_FORMAT=yaml

# --- what starts ----------------------------------------------------------------------
# start NAME [DIR]: runs the node (from DIR, default /) until ready, then stops it by PID.
start() {
    local name=$1 dir=${2:-/} pid
    local cfg=$work/$name.yaml
    [ -e "$cfg" ] || cfg=$work/conf/$name.yaml
    (cd "$dir" && exec "$node" --config "$cfg") >"$work/$name.out" 2>"$work/$name.err" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 1 100); do
        grep -q '^node_ready' "$work/$name.out" && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    grep -q '^node_ready' "$work/$name.out" || fail "$name: not ready: $(cat "$work/$name.err")"
    kill -TERM "$pid"
    wait "$pid" || fail "$name: exit status $? after SIGTERM"
}

"$node" --check-config "$work/good.yaml" >"$work/good.check" 2>&1 || fail "good: $(cat "$work/good.check")"
start good
rm -rf "$work/data"

# an empty role list: ok, with a warning naming the role, at --check-config and at start
node_cfg "$work/authz.yaml" "$N1" "$N1"
sed -i "s#producers: \[$C1\]#producers: []#" "$work/authz.yaml"
out=$("$node" --check-config "$work/authz.yaml" 2>&1) || fail "authz refused: $out"
printf '%s\n' "$out" | grep -q "warning: $work/authz\.yaml:9: key 'authorization\.producers': empty list: the producer role is allowed to nobody" ||
    fail "authz warning: $out"
start authz
grep -q "warn .*key 'authorization.producers': empty list" "$work/authz.err" ||
    fail "no start-up warning: $(cat "$work/authz.err")"
rm -rf "$work/data"

# relative paths are relative to the config file, not to the working directory
mkdir -p "$work/conf/certs" "$work/other"
cp "$C/ca.pem" "$C/$N1.pem" "$C/$N1.key" "$work/conf/certs/"
node_cfg "$work/rel.tmpl" "$N1" "$N1"
sed -e "s#data_dir: .*#data_dir: data#" -e "s#$C/#certs/#g" "$work/rel.tmpl" >"$work/conf/rel.yaml"
(cd / && "$node" --check-config "$work/conf/rel.yaml") >"$work/rel.check" 2>&1 ||
    fail "relative paths refused: $(cat "$work/rel.check")"
start rel "$work/other"
mv "$work/rel.out" "$work/rel.out.1"
[ -d "$work/conf/data" ] || fail "rel: data_dir was not created next to the config file"
# the same file elsewhere, run from the directory that has certs/: still looked up next to it
cp "$work/conf/rel.yaml" "$work/other/rel.yaml"
(cd "$work/conf" && "$node" --check-config "$work/other/rel.yaml") >"$work/relcopy.out" 2>&1 &&
    fail "other/rel.yaml: accepted without its certificates"
grep -q "rel\.yaml:6: key 'tls\.ca': CA file $work/other/certs/ca\.pem does not exist" \
    "$work/relcopy.out" || fail "other/rel.yaml message: $(cat "$work/relcopy.out")"

echo "PASS"
exit 0
