#!/usr/bin/env bash
# 11 metadata authorization on: meta.operators names one operator on every
# server, CN CHAOS_AUTHZ_OPERATOR (default aaaaaaaa-...: SPEC §8 says
# vtop-admin, but meta.operators accepts only UUID or decimal CNs, and a
# config naming vtop-admin is refused at start -- docs/CHAOS.md, Findings);
# the admin config carries its certificate, and the producer's client
# certificate is not an operator. Asserts: the cluster comes up (init and create-topic by the
# operator; the data nodes register themselves and the lease agent of the
# leader acquires its own range lease, epoch >= 1); the operator may
# add-learner (a metadata-only server 4), create-topic and register-node;
# with a data node's certificate add-learner, create-topic and a
# register-node for another node are refused "unauthorized", while status
# answers; the client (producer) certificate is refused add-learner too;
# after a step-down the lease agents acquire the lease again; a quorum
# producer's records are verified on 3 replicas; checker clean.
set -uo pipefail
# shellcheck source-path=SCRIPTDIR source=../lib.sh
. "$(dirname "$0")/../lib.sh"
chaos_begin 11-authz "$@"
export CL_ADMIN_CN=${CHAOS_AUTHZ_OPERATOR:-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa} CL_META_PEERS="1 2 3 4"
records=${CHAOS_AUTHZ_RECORDS:-5000}

# as CN FILE: an admin config like admin.yaml with certificate CN
as() {
    sed "s|^tls:.*|tls: {ca: $W/certs/ca.pem, cert: $W/certs/$1.pem, key: $W/certs/$1.key}|" \
        "$W/admin.yaml" >"$2"
}
# refused WHAT CONFIG ARGS...: the command exits non-zero saying unauthorized
refused() {
    local what=$1 cfg=$2 rc=0
    shift 2
    ctl meta "$@" --config "$cfg" >"$W/refused.out" 2>&1 || rc=$?
    [ "$rc" != 0 ] || chaos_fail "$what was allowed: $(cat "$W/refused.out")"
    grep -qi unauthorized "$W/refused.out" || chaos_fail "$what: refused without 'unauthorized': $(cat "$W/refused.out")"
    chaos_say "$what refused (exit $rc): $(tail -n 1 "$W/refused.out")"
}

chaos_up
grep -q "operators: \[$CL_ADMIN_CN\]" "$W/n1.yaml" || chaos_fail "authorization is not on in the node config"
[ "$EPOCH" -ge 1 ] || chaos_fail "the leader's lease epoch is $EPOCH"
chaos_say "node $LEADER acquired its own lease at epoch $EPOCH with authorization on"
via=$((LEADER % 3 + 1))
chaos_consumer "$via"
chaos_producer "$via" "$records"

# the operator
chaos_meta_server 4 || chaos_fail "meta server 4 did not start"
ctl meta add-learner --config "$W/admin.yaml" --id 4 --address "$(cl_meta_peer 4)" >"$W/op.out" 2>&1 ||
    chaos_fail "operator add-learner: $(cat "$W/op.out")"
chaos_meta_status 1 | grep -q '{"id":4,"role":"learner"' || chaos_fail "4 is not a learner: $(chaos_meta_status 1)"
ctl meta create-topic --config "$W/admin.yaml" --name authz-op --ranges 1 --replication-factor 3 \
    >"$W/op.out" 2>&1 || chaos_fail "operator create-topic: $(cat "$W/op.out")"
ctl meta register-node --config "$W/admin.yaml" --node "$(printf '00000000-0000-4000-8000-%012d' 77)" \
    --addr 127.0.0.1:30077 >"$W/op.out" 2>&1 || chaos_fail "operator register-node: $(cat "$W/op.out")"
chaos_say "operator $CL_ADMIN_CN: add-learner, create-topic, register-node accepted"

# a data node's certificate
data=$(cl_uuid 2)
as "$data" "$W/admin-data.yaml"
ctl meta status --config "$W/admin-data.yaml" >"$W/data-status.out" 2>&1 ||
    chaos_fail "status with the data certificate: $(cat "$W/data-status.out")"
grep -q '^node_id=' "$W/data-status.out" || chaos_fail "status with the data certificate: $(cat "$W/data-status.out")"
refused "add-learner with the data certificate" "$W/admin-data.yaml" add-learner --id 5 --address "$(cl_meta_peer 5)"
refused "create-topic with the data certificate" "$W/admin-data.yaml" create-topic --name authz-data --ranges 1 --replication-factor 3
refused "register-node of another node with the data certificate" "$W/admin-data.yaml" register-node \
    --node "$(cl_uuid 3)" --addr 127.0.0.1:30078
as "$CL_CLIENT" "$W/admin-client.yaml"
refused "add-learner with the client certificate" "$W/admin-client.yaml" add-learner --id 5 --address "$(cl_meta_peer 5)"
chaos_meta_status 1 | grep -q '{"id":5,' && chaos_fail "server 5 is in the configuration after refusals"

chaos_await_acked $((records / 2)) || chaos_fail "producer progress"
read -r old old_epoch < <(chaos_holder)
cl_client_head "$old" "" >"$W/norange.yaml"
ctl range step-down --config "$W/norange.yaml" --topic "$CHAOS_TOPIC" --range-index 0 \
    >"$W/stepdown.out" 2>&1 || chaos_fail "step-down: $(cat "$W/stepdown.out")"
chaos_await_leader_change "$old" "$old_epoch" || chaos_fail "no lease acquired after step-down with authorization on"
chaos_say "after a step-down node $LEADER acquired the lease at epoch $EPOCH"
chaos_wait_producer || chaos_fail "producer exit $?: $(cat "$W/produce.json")"
chaos_all_acked "$records"
chaos_stop_consumer
chaos_final_check
echo "PASS: 11 authz: operator $CL_ADMIN_CN (the only one) may add-learner/create-topic/register-node; data and client certificates refused 'unauthorized', data status OK; leases acquired by the nodes themselves (epoch $old_epoch, then $EPOCH on node $LEADER); $records acked, verified on 3 replicas"
