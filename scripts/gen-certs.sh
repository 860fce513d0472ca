#!/usr/bin/env bash
# Development / test certificates for vtop's mutual TLS: a dev CA plus one
# ECDSA P-256 cert+key per principal CN, and (for tests) certificates that
# must be refused: one from an unrelated CA, an expired one, a not-yet-valid
# one, one with an invalid CN, one without a CN and one with two CNs. Uses the openssl CLI only
# to make files; vtop itself never links the system OpenSSL.
#
# Usage: scripts/gen-certs.sh OUTDIR [--node-cns CN,...] [--client-cns CN,...] [--force]
#
# Layout of OUTDIR:
#   ca.pem ca.key                 the dev CA (3650 days)
#   <cn>.pem <cn>.key             one per node and client CN (825 days)
#   other-ca/ca.pem ca.key        an unrelated CA
#   other-ca/client.pem .key      CN = first client CN, signed by other-ca
#   expired.pem .key              CN = first client CN, valid 2020-01-01..2020-01-02
#   future.pem .key               CN = first client CN, valid from 2099-01-01
#   invalid-cn.pem .key           CN = "not a uuid"
#   no-cn.pem .key                subject O=vtop only
#   two-cn.pem .key               CN = first client CN, then a second CN "99"
#
# Idempotent: an existing CA is reused and existing files are kept; only
# missing files are made. --force deletes OUTDIR's generated files first.
set -euo pipefail

usage() {
    echo "usage: $0 OUTDIR [--node-cns CN1,CN2,...] [--client-cns CN1,...] [--force]" >&2
    exit 2
}

[ $# -ge 1 ] || usage
outdir=$1
shift
node_cns="1,2,3,00000000-0000-4000-8000-000000000001,00000000-0000-4000-8000-000000000002,00000000-0000-4000-8000-000000000003"
client_cns="11111111-1111-4111-8111-111111111111,22222222-2222-4222-8222-222222222222"
force=0
while [ $# -gt 0 ]; do
    case $1 in
    --node-cns)
        [ $# -ge 2 ] || usage
        node_cns=$2
        shift 2
        ;;
    --client-cns)
        [ $# -ge 2 ] || usage
        client_cns=$2
        shift 2
        ;;
    --force)
        force=1
        shift
        ;;
    *) usage ;;
    esac
done

command -v openssl >/dev/null || {
    echo "gen-certs: the openssl command-line tool is required" >&2
    exit 1
}

mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
made=()

# A CN becomes a file name: refuse anything that could escape OUTDIR.
check_cn() {
    case $1 in
    "" | *[!A-Za-z0-9._-]* | .*)
        echo "gen-certs: CN '$1' is not usable as a file name" >&2
        exit 2
        ;;
    esac
}

cat >"$tmp/ext.cnf" <<'EOF'
[ leaf ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
EOF

# run CMD...: quiet on success, shows openssl's output on failure.
run() {
    if ! "$@" >"$tmp/openssl.log" 2>&1; then
        echo "gen-certs: failed: $*" >&2
        cat "$tmp/openssl.log" >&2
        exit 1
    fi
}

new_key() {
    run openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"
    chmod 600 "$1"
}

# Files signed by a CA made in this run are re-made even if present (they
# would be signed by the old CA).
fresh_cas=" "
exists() {
    local out=$1 cadir=$2
    case $fresh_cas in *" $cadir "*) return 1 ;; esac
    [ -s "$out.pem" ] && [ -s "$out.key" ]
}

# make_ca DIR: DIR/ca.pem + DIR/ca.key unless present.
make_ca() {
    local dir=$1 name=$2
    [ -s "$dir/ca.pem" ] && [ -s "$dir/ca.key" ] && return 0
    if [ -s "$dir/ca.pem" ]; then
        echo "gen-certs: $dir/ca.pem exists but $dir/ca.key does not; use --force" >&2
        exit 1
    fi
    mkdir -p "$dir"
    new_key "$dir/ca.key"
    run openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 -subj "/O=vtop/CN=$name" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -out "$dir/ca.pem"
    made+=("$dir/ca.pem" "$dir/ca.key")
    fresh_cas+="$dir "
}

# make_leaf CADIR OUT SUBJECT: OUT.pem + OUT.key signed by CADIR, 825 days.
make_leaf() {
    local cadir=$1 out=$2 subj=$3
    exists "$out" "$cadir" && return 0
    new_key "$out.key"
    run openssl req -new -key "$out.key" -subj "$subj" -out "$tmp/leaf.csr"
    run openssl x509 -req -in "$tmp/leaf.csr" -CA "$cadir/ca.pem" -CAkey "$cadir/ca.key" \
        -set_serial "0x$(openssl rand -hex 16)" -days 825 -sha256 \
        -extfile "$tmp/ext.cnf" -extensions leaf -out "$out.pem"
    made+=("$out.pem" "$out.key")
}

# make_dated OUT CN START END: a leaf from the good CA with explicit validity
# (openssl x509 -req in OpenSSL 3.0 cannot set notBefore, so use `openssl ca`).
make_dated() {
    local out=$1 cn=$2 start=$3 end=$4
    exists "$out" "$outdir" && return 0
    new_key "$out.key"
    run openssl req -new -key "$out.key" -subj "/O=vtop/CN=$cn" -out "$tmp/dated.csr"
    local db=$tmp/ca-db
    rm -rf "$db"
    mkdir -p "$db/new"
    : >"$db/index.txt"
    openssl rand -hex 16 >"$db/serial"
    cat >"$db/ca.cnf" <<EOF
[ ca ]
default_ca = dev
[ dev ]
dir = $db
database = $db/index.txt
new_certs_dir = $db/new
serial = $db/serial
certificate = $outdir/ca.pem
private_key = $outdir/ca.key
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
x509_extensions = leaf
[ any ]
organizationName = optional
commonName = supplied
[ leaf ]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
EOF
    run openssl ca -batch -config "$db/ca.cnf" -notext -startdate "$start" -enddate "$end" \
        -in "$tmp/dated.csr" -out "$out.pem"
    made+=("$out.pem" "$out.key")
}

if [ "$force" = 1 ]; then
    rm -rf "$outdir/other-ca"
    rm -f "$outdir"/*.pem "$outdir"/*.key
fi

IFS=, read -r -a nodes <<<"$node_cns"
IFS=, read -r -a clients <<<"$client_cns"
[ ${#clients[@]} -ge 1 ] || {
    echo "gen-certs: --client-cns needs at least one CN" >&2
    exit 2
}
for cn in "${nodes[@]}" "${clients[@]}"; do
    check_cn "$cn"
done

make_ca "$outdir" "vtop dev CA"
for cn in "${nodes[@]}" "${clients[@]}"; do
    make_leaf "$outdir" "$outdir/$cn" "/O=vtop/CN=$cn"
done

first_client=${clients[0]}
make_ca "$outdir/other-ca" "unrelated CA"
make_leaf "$outdir/other-ca" "$outdir/other-ca/client" "/O=vtop/CN=$first_client"
make_dated "$outdir/expired" "$first_client" 20200101000000Z 20200102000000Z
make_dated "$outdir/future" "$first_client" 20990101000000Z 20991231000000Z
make_leaf "$outdir" "$outdir/invalid-cn" "/O=vtop/CN=not a uuid"
make_leaf "$outdir" "$outdir/no-cn" "/O=vtop"
make_leaf "$outdir" "$outdir/two-cn" "/O=vtop/CN=$first_client/CN=99"

if [ ${#made[@]} -eq 0 ]; then
    echo "gen-certs: $outdir is up to date"
else
    echo "gen-certs: made ${#made[@]} files in $outdir:"
    printf '  %s\n' "${made[@]}"
fi
