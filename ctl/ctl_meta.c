/* `vtopctl meta ...`: the metadata plane's admin commands over the admin RPC
 * (ctl_meta_client.h). Membership: status, membership, init, add-learner,
 * promote, change-membership, remove, transfer-leader. State machine:
 * register-node, set-node-state, create-topic, grant-lease, release-lease
 * (proposals: print `committed index=N` and the response; exit 1 when
 * Rejected), range-lease and nodes (linearizable reads; nodes is in
 * ctl_meta_topic.c). Exit: 0 ok, 1 refused /
 * rejected / unreachable, 2 usage or bad config. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_client.h"
#include "ctl_meta.h"
#include "ctl_meta_client.h"
#include "ctl_meta_help.h"
#include "vt_log_types.h"

static const char meta_usage[] =
    "usage: vtopctl meta <command> [--config ADMIN.yaml] [--endpoint HOST:PORT]... [options]\n"
    "       vtopctl meta <command> --help     (that command's usage, flags and an example)\n"
    "\n"
    "Common options:\n"
    "  --config PATH          admin client config (docs/OPERATIONS.md; default:\n"
    "                         $VTOP_ADMIN_CONFIG, then ~/.config/vtop/admin.yaml)\n"
    "  --endpoint HOST:PORT   ask this admin listener instead of the config's endpoints\n"
    "                         (repeatable)\n"
    "  --format text|json     output format; --json is --format json\n"
    "  --request-id UUID      proposals: the dedup key (default: random)\n"
    "  --issued-at-ms MS      proposals: the proposer's clock (default: now)\n"
    "\n"
    "Commands and their options:\n"
    "  status                                   this server's view (no redirect)\n"
    "  membership                               the leader's configuration\n"
    "  init --members ID=HOST:PORT[,...]        bootstrap an empty server (first endpoint)\n"
    "  add-learner --id N --address HOST:PORT\n"
    "  promote --id N                           learner -> voter\n"
    "  change-membership --id N --role voter|learner\n"
    "  remove --id N\n"
    "  transfer-leader [--id N]                 0 or absent: any voter\n"
    "  register-node --node UUID --addr HOST:PORT [--native-addr HOST:PORT]\n"
    "                [--expected-generation G]     (--address is --addr)\n"
    "  set-node-state --node UUID --state active|draining|dead --expected-generation G\n"
    "  create-topic --name NAME [--ranges K (1..1024, default 1)]\n"
    "               [--replication-factor R (1..7, default 1)] [--replicas UUID,...]\n"
    "               [--topic-uuid UUID] [--root-range-uuid UUID]   (random when omitted)\n"
    "  nodes                                    every registered node (all pages)\n"
    "  grant-lease --range UUID --holder UUID --expected-generation G\n"
    "  release-lease --range UUID --holder UUID --epoch E\n"
    "  range-lease --range UUID\n"
    "\n"
    "Exit: 0 ok, 1 refused, rejected or unreachable, 2 usage or bad config.\n";

#define HELP_EXIT (-1)

struct opts {
    const char *usage; /* the subcommand's own (meta_sub) */
    const char *config_path;
    struct vt_meta_admin_config cfg;
    bool cfg_loaded;
    const char *endpoints[VT_META_ADMIN_MAX_ENDPOINTS];
    uint32_t n_endpoints;
    bool json;
    uint8_t request_id[16];
    bool has_request_id;
    int64_t issued_at_ms;
    bool has_issued_at;
    uint64_t id;
    bool has_id;
    const char *address, *native_addr, *members, *name, *role, *state, *replicas;
    uint64_t ranges, rf;
    bool has_ranges, has_rf;
    uint8_t node[16], range[16], holder[16], topic[16], root_range[16];
    bool has_node, has_range, has_holder, has_topic, has_root_range;
    uint64_t expected_generation, epoch;
    bool has_expected_generation, has_epoch;
};

enum {
    O_CONFIG = 1000, O_ENDPOINT, O_REQUEST_ID, O_ISSUED_AT, O_ID, O_ADDRESS, O_MEMBERS,
    O_NAME, O_ROLE, O_STATE, O_NODE, O_RANGE, O_HOLDER, O_TOPIC, O_ROOT_RANGE, O_GEN, O_EPOCH,
    O_NATIVE, O_RANGES, O_RF, O_REPLICAS, O_TOPIC_UUID, O_ROOT_UUID,
};

static int
uuid_opt(const char *usage, const char *flag, const char *text, uint8_t out[16], bool *has)
{
    if (vt_cfg_parse_uuid(text, strlen(text), out) != 0)
        return ctl_usage_error(usage, "%s: '%s' is not a UUID", flag, text);
    *has = true;
    return 0;
}

static int
parse_one(int c, struct opts *o)
{
    uint64_t v = 0;
    int rc;
    switch (c) {
    case 'h': fputs(o->usage, stdout); return HELP_EXIT;
    case O_CONFIG:
        if (o->config_path != NULL)
            return ctl_usage_error(o->usage, "--config given twice");
        o->config_path = optarg;
        return 0;
    case O_ENDPOINT:
        if (o->n_endpoints == VT_META_ADMIN_MAX_ENDPOINTS ||
            !vt_meta_admin_addr_valid(optarg, strlen(optarg)))
            return ctl_usage_error(o->usage, "--endpoint '%s': not host:port (or too many)",
                                   optarg);
        o->endpoints[o->n_endpoints++] = optarg;
        return 0;
    case CTL_OPT_JSON:
    case CTL_OPT_FORMAT: return ctl_format_opt(o->usage, c, optarg, &o->json);
    case O_REQUEST_ID: return uuid_opt(o->usage, "--request-id", optarg, o->request_id, &o->has_request_id);
    case O_ISSUED_AT:
        rc = ctl_opt_u64(o->usage, "--issued-at-ms", optarg, 0, INT64_MAX, &v);
        o->issued_at_ms = (int64_t)v;
        o->has_issued_at = rc == 0;
        return rc;
    case O_ID:
        rc = ctl_opt_u64(o->usage, "--id", optarg, 0, UINT64_MAX, &o->id);
        o->has_id = rc == 0;
        return rc;
    case O_ADDRESS: o->address = optarg; return 0;
    case O_NATIVE: o->native_addr = optarg; return 0;
    case O_REPLICAS: o->replicas = optarg; return 0;
    case O_RANGES:
        rc = ctl_opt_u64(o->usage, "--ranges", optarg, 1, VT_META_TOPIC_RANGES_MAX, &o->ranges);
        o->has_ranges = rc == 0;
        return rc;
    case O_RF:
        rc = ctl_opt_u64(o->usage, "--replication-factor", optarg, 1, VT_META_RF_MAX, &o->rf);
        o->has_rf = rc == 0;
        return rc;
    case O_MEMBERS: o->members = optarg; return 0;
    case O_NAME: o->name = optarg; return 0;
    case O_ROLE: o->role = optarg; return 0;
    case O_STATE: o->state = optarg; return 0;
    case O_NODE: return uuid_opt(o->usage, "--node", optarg, o->node, &o->has_node);
    case O_RANGE: return uuid_opt(o->usage, "--range", optarg, o->range, &o->has_range);
    case O_HOLDER: return uuid_opt(o->usage, "--holder", optarg, o->holder, &o->has_holder);
    case O_TOPIC: return uuid_opt(o->usage, "--topic", optarg, o->topic, &o->has_topic);
    case O_ROOT_RANGE: return uuid_opt(o->usage, "--root-range", optarg, o->root_range, &o->has_root_range);
    case O_TOPIC_UUID: return uuid_opt(o->usage, "--topic-uuid", optarg, o->topic, &o->has_topic);
    case O_ROOT_UUID:
        return uuid_opt(o->usage, "--root-range-uuid", optarg, o->root_range, &o->has_root_range);
    case O_GEN:
        rc = ctl_opt_u64(o->usage, "--expected-generation", optarg, 0, UINT64_MAX,
                         &o->expected_generation);
        o->has_expected_generation = rc == 0;
        return rc;
    case O_EPOCH:
        rc = ctl_opt_u64(o->usage, "--epoch", optarg, 0, UINT64_MAX, &o->epoch);
        o->has_epoch = rc == 0;
        return rc;
    default: return -2;
    }
}

static int
parse_opts(int argc, char **argv, const struct option *longopts, struct opts *o)
{
    ctl_opt_reset();
    int c;
    while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
        int rc = parse_one(c, o);
        if (rc == -2)
            return ctl_opt_error(c, argv, o->usage);
        if (rc != 0)
            return rc;
    }
    if (ctl_opt_no_positional(argc, argv, o->usage) != 0)
        return CTL_EXIT_USAGE;
    const char *path = ctl_meta_config_default(o->config_path);
    if (path == NULL)
        return ctl_usage_error(o->usage, CTL_NO_ADMIN_CONFIG_MSG);
    int rc = ctl_meta_config_load(path, &o->cfg);
    if (rc != 0)
        return rc;
    o->cfg_loaded = true;
    if (o->n_endpoints > 0) { /* --endpoint replaces the config's list */
        for (uint32_t i = 0; i < o->cfg.n_endpoints; i++)
            free(o->cfg.endpoints[i]);
        for (uint32_t i = 0; i < o->n_endpoints; i++)
            o->cfg.endpoints[i] = strdup(o->endpoints[i]);
        o->cfg.n_endpoints = o->n_endpoints;
        for (uint32_t i = 0; i < o->n_endpoints; i++)
            if (o->cfg.endpoints[i] == NULL)
                return CTL_EXIT_FAIL;
    }
    return 0;
}

/* ---- output helpers ------------------------------------------------------------------- */

static void
uuid_str(const uint8_t id[16], char out[37])
{
    vt_uuid_format(id, out);
}

static int
print_error_answer(const struct ctl_meta_answer *a)
{
    ctl_errorf("%s: %s: %s", a->server, vt_meta_admin_error_name(a->err.code), a->err.msg);
    return CTL_EXIT_FAIL;
}

/* Sends and checks the answer kind; prints refusals. 0, or an exit code. */
static int
call(struct opts *o, bool follow, uint16_t kind, const struct vt_wr *w, uint16_t want,
     struct ctl_meta_answer *a)
{
    VT_ASSERT(vt_wr_ok(w));
    if (ctl_meta_call(&o->cfg, follow, kind, w->buf, w->len, a) != 0)
        return CTL_EXIT_FAIL;
    if (a->kind == VT_META_ADMIN_K_ERROR)
        return print_error_answer(a);
    if (a->kind != want) {
        ctl_errorf("%s answered with kind %u, expected %u", a->server, a->kind, want);
        return CTL_EXIT_FAIL;
    }
    return 0;
}

/* ---- status / membership ---------------------------------------------------------------- */

static void
print_status(const struct vt_meta_admin_status *s, bool json)
{
    if (json) {
        printf("{\"node_id\":%" PRIu64 ",\"state\":\"%s\",\"term\":%" PRIu64
               ",\"voted_for\":%" PRIu64 ",\"leader_id\":%" PRIu64 ",\"leader_admin\":",
               s->node_id, vt_meta_admin_state_name(s->state), s->term, s->voted_for,
               s->leader_id);
        ctl_json_str(s->leader_admin);
        printf(",\"ready\":%s,\"commit_index\":%" PRIu64 ",\"last_index\":%" PRIu64
               ",\"last_applied\":%" PRIu64 ",\"fsm_applied\":%" PRIu64 ",\"members\":[",
               s->ready ? "true" : "false", s->commit_index, s->last_index, s->last_applied,
               s->fsm_applied);
        for (uint32_t i = 0; i < s->n_members; i++) {
            printf("%s{\"id\":%" PRIu64 ",\"role\":\"%s\",\"address\":", i ? "," : "",
                   s->members[i].id, vt_meta_admin_role_name(s->members[i].role));
            ctl_json_str(s->members[i].addr);
            putchar('}');
        }
        printf("]}\n");
        return;
    }
    printf("node_id=%" PRIu64 " state=%s term=%" PRIu64 " leader=%" PRIu64
           " leader_admin=%s ready=%s\n",
           s->node_id, vt_meta_admin_state_name(s->state), s->term, s->leader_id,
           s->leader_admin[0] ? s->leader_admin : "-", s->ready ? "yes" : "no");
    printf("commit_index=%" PRIu64 " last_index=%" PRIu64 " last_applied=%" PRIu64
           " fsm_applied=%" PRIu64 " voted_for=%" PRIu64 "\n",
           s->commit_index, s->last_index, s->last_applied, s->fsm_applied, s->voted_for);
    for (uint32_t i = 0; i < s->n_members; i++)
        printf("member id=%" PRIu64 " role=%s address=%s\n", s->members[i].id,
               vt_meta_admin_role_name(s->members[i].role), s->members[i].addr);
}

static int
get_status(struct opts *o, bool follow_leader, struct vt_meta_admin_status *s)
{
    uint8_t buf[8];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    struct ctl_meta_answer a;
    int rc = call(o, false, VT_META_ADMIN_K_STATUS, &w, VT_META_ADMIN_K_STATUS_RESP, &a);
    char err[200];
    if (rc == 0 && vt_meta_admin_status_decode(a.payload, a.len, s, err, sizeof(err)) != 0) {
        ctl_errorf("%s: undecodable status: %s", a.server, err);
        return CTL_EXIT_FAIL;
    }
    if (rc != 0 || !follow_leader || s->state == 3 || s->leader_admin[0] == '\0')
        return rc;
    /* ask the leader for the authoritative configuration */
    free(o->cfg.endpoints[0]);
    o->cfg.endpoints[0] = strdup(s->leader_admin);
    if (o->cfg.endpoints[0] == NULL)
        return CTL_EXIT_FAIL;
    return get_status(o, false, s);
}

static int
cmd_status(struct opts *o, bool membership)
{
    struct vt_meta_admin_status s;
    int rc = get_status(o, membership, &s);
    if (rc != 0)
        return rc;
    if (!membership) {
        print_status(&s, o->json);
        return 0;
    }
    if (o->json) {
        printf("{\"leader_id\":%" PRIu64 ",\"members\":[", s.leader_id);
        for (uint32_t i = 0; i < s.n_members; i++) {
            printf("%s{\"id\":%" PRIu64 ",\"role\":\"%s\",\"address\":", i ? "," : "",
                   s.members[i].id, vt_meta_admin_role_name(s.members[i].role));
            ctl_json_str(s.members[i].addr);
            putchar('}');
        }
        printf("]}\n");
        return 0;
    }
    for (uint32_t i = 0; i < s.n_members; i++)
        printf("%s %" PRIu64 " %s%s\n", vt_meta_admin_role_name(s.members[i].role),
               s.members[i].id, s.members[i].addr,
               s.members[i].id == s.leader_id ? " leader" : "");
    return 0;
}

/* ---- membership changes ------------------------------------------------------------------ */

static int
parse_members(const char *usage, const char *text, struct vt_meta_admin_init *init)
{
    char buf[4096];
    if (strlen(text) >= sizeof(buf))
        return ctl_usage_error(usage, "--members: too long");
    snprintf(buf, sizeof(buf), "%s", text);
    init->n_members = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        uint64_t id = 0;
        if (eq == NULL || init->n_members == VT_META_ADMIN_MAX_MEMBERS)
            return ctl_usage_error(usage, "--members: '%s' is not ID=HOST:PORT (or more "
                                   "than %u members)", tok, VT_META_ADMIN_MAX_MEMBERS);
        *eq = '\0';
        if (vt_cfg_parse_u64(tok, strlen(tok), &id) != 0 || id == 0 ||
            !vt_meta_admin_addr_valid(eq + 1, strlen(eq + 1)))
            return ctl_usage_error(usage, "--members: '%s=%s' is not ID=HOST:PORT with an "
                                   "id >= 1", tok, eq + 1);
        struct vt_meta_admin_member *m = &init->members[init->n_members++];
        m->id = id;
        m->role = VT_META_ADMIN_ROLE_VOTER;
        snprintf(m->addr, sizeof(m->addr), "%s", eq + 1);
    }
    if (init->n_members == 0)
        return ctl_usage_error(usage, "--members: no members");
    return 0;
}

static int
print_done(const struct ctl_meta_answer *a, const char *what, bool json)
{
    struct vt_meta_admin_done d;
    char err[200];
    if (vt_meta_admin_done_decode(a->payload, a->len, &d, err, sizeof(err)) != 0) {
        ctl_errorf("%s: undecodable answer: %s", a->server, err);
        return CTL_EXIT_FAIL;
    }
    if (json)
        printf("{\"done\":\"%s\",\"index\":%" PRIu64 ",\"leader_id\":%" PRIu64 "}\n", what,
               d.index, d.leader_id);
    else
        printf("%s done index=%" PRIu64 " leader=%" PRIu64 "\n", what, d.index, d.leader_id);
    return 0;
}

static int
cmd_init(struct opts *o)
{
    struct vt_meta_admin_init init;
    if (o->members == NULL)
        return ctl_usage_error(o->usage, "init needs --members ID=HOST:PORT[,...]");
    int rc = parse_members(o->usage, o->members, &init);
    if (rc != 0)
        return rc;
    uint8_t buf[VT_META_ADMIN_PAYLOAD_MAX];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_init_encode(&w, &init);
    struct ctl_meta_answer a;
    rc = call(o, false, VT_META_ADMIN_K_INIT, &w, VT_META_ADMIN_K_DONE, &a);
    return rc ? rc : print_done(&a, "init", o->json);
}

static int
cmd_change(struct opts *o, const char *name)
{
    uint8_t buf[256];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    uint16_t kind;
    bool transfer = strcmp(name, "transfer-leader") == 0;
    if (!transfer && (!o->has_id || o->id == 0))
        return ctl_usage_error(o->usage, "%s needs --id N (N >= 1)", name);
    if (strcmp(name, "add-learner") == 0) {
        struct vt_meta_admin_member m = {.id = o->id};
        if (o->address == NULL || !vt_meta_admin_addr_valid(o->address, strlen(o->address)))
            return ctl_usage_error(o->usage, "add-learner needs --address HOST:PORT");
        snprintf(m.addr, sizeof(m.addr), "%s", o->address);
        vt_meta_admin_add_learner_encode(&w, &m);
        kind = VT_META_ADMIN_K_ADD_LEARNER;
    } else if (transfer) {
        vt_meta_admin_transfer_encode(&w, o->has_id ? o->id : 0);
        kind = VT_META_ADMIN_K_TRANSFER;
    } else {
        struct vt_meta_admin_change c = {.id = o->id};
        if (strcmp(name, "promote") == 0) {
            c.op = VT_META_ADMIN_OP_PROMOTE;
        } else if (strcmp(name, "remove") == 0) {
            c.op = VT_META_ADMIN_OP_REMOVE;
        } else if (o->role != NULL && strcmp(o->role, "voter") == 0) {
            c.op = VT_META_ADMIN_OP_PROMOTE;
        } else if (o->role != NULL && strcmp(o->role, "learner") == 0) {
            c.op = VT_META_ADMIN_OP_DEMOTE;
        } else {
            return ctl_usage_error(o->usage, "change-membership needs --role voter|learner");
        }
        vt_meta_admin_change_encode(&w, &c);
        kind = VT_META_ADMIN_K_CHANGE;
    }
    struct ctl_meta_answer a;
    int rc = call(o, true, kind, &w, VT_META_ADMIN_K_DONE, &a);
    return rc ? rc : print_done(&a, name, o->json);
}

/* ---- proposals ------------------------------------------------------------------------- */

static int
random_uuid(uint8_t out[16])
{
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, out, 16) : -1;
    if (fd >= 0)
        close(fd);
    if (n != 16) {
        ctl_errorf("cannot read /dev/urandom");
        return CTL_EXIT_FAIL;
    }
    out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
    out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
    return 0;
}

static void
print_response(const struct vt_meta_admin_propose_resp *pr, bool json)
{
    const struct vt_meta_response *r = &pr->resp;
    char a[37], b[37];
    if (json) {
        printf("{\"committed_index\":%" PRIu64 ",\"response\":", pr->index);
        switch (r->kind) {
        case VT_META_RESP_ACK:
            printf("{\"kind\":\"Ack\",\"generation\":%" PRIu64 "}", r->generation);
            break;
        case VT_META_RESP_TOPIC_CREATED:
            uuid_str(r->topic, a);
            uuid_str(r->root_range, b);
            printf("{\"kind\":\"TopicCreated\",\"topic\":\"%s\",\"topic_epoch\":%" PRIu64
                   ",\"root_range\":\"%s\"}", a, r->epoch, b);
            break;
        case VT_META_RESP_LEASE_GRANTED:
            printf("{\"kind\":\"LeaseGranted\",\"fencing_epoch\":%" PRIu64
                   ",\"range_generation\":%" PRIu64 "}", r->epoch, r->generation);
            break;
        case VT_META_RESP_LEASES_RENEWED:
            printf("{\"kind\":\"LeasesRenewed\",\"renewed\":[");
            for (uint32_t i = 0; i < r->renewed_n; i++)
                printf("%s%s", i ? "," : "", vt_meta_renewed_bit(r, i) ? "true" : "false");
            printf("]}");
            break;
        default:
            printf("{\"kind\":\"Rejected\",\"error\":\"%s\",\"detail\":",
                   vt_meta_err_name(r->error));
            ctl_json_str(r->detail);
            putchar('}');
        }
        printf("}\n");
        return;
    }
    printf("committed index=%" PRIu64 "\n", pr->index);
    switch (r->kind) {
    case VT_META_RESP_ACK: printf("Ack generation=%" PRIu64 "\n", r->generation); break;
    case VT_META_RESP_TOPIC_CREATED:
        uuid_str(r->topic, a);
        uuid_str(r->root_range, b);
        printf("TopicCreated topic=%s topic_epoch=%" PRIu64 " root_range=%s\n", a, r->epoch, b);
        break;
    case VT_META_RESP_LEASE_GRANTED:
        printf("LeaseGranted fencing_epoch=%" PRIu64 " range_generation=%" PRIu64 "\n", r->epoch,
               r->generation);
        break;
    case VT_META_RESP_LEASES_RENEWED:
        printf("LeasesRenewed n=%u renewed=", r->renewed_n);
        for (uint32_t i = 0; i < r->renewed_n; i++)
            putchar(vt_meta_renewed_bit(r, i) ? '1' : '0');
        putchar('\n');
        break;
    default:
        printf("Rejected error=%s detail=\"%s\"\n", vt_meta_err_name(r->error), r->detail);
    }
}

static int
propose(struct opts *o, struct vt_meta_cmd *cmd)
{
    int rc = o->has_request_id ? 0 : random_uuid(o->request_id);
    if (rc != 0)
        return rc;
    memcpy(cmd->request_id, o->request_id, 16);
    if (o->has_issued_at) {
        cmd->issued_at_ms = o->issued_at_ms;
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        cmd->issued_at_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    uint8_t buf[VT_META_ADMIN_PAYLOAD_MAX];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_propose_encode(&w, cmd);
    struct ctl_meta_answer a;
    rc = call(o, true, VT_META_ADMIN_K_PROPOSE, &w, VT_META_ADMIN_K_PROPOSE_RESP, &a);
    if (rc != 0)
        return rc;
    struct vt_meta_admin_propose_resp pr;
    char err[200];
    if (vt_meta_admin_propose_resp_decode(a.payload, a.len, &pr, err, sizeof(err)) != 0) {
        ctl_errorf("%s: undecodable answer: %s", a.server, err);
        return CTL_EXIT_FAIL;
    }
    print_response(&pr, o->json);
    return pr.resp.kind == VT_META_RESP_REJECTED ? CTL_EXIT_FAIL : CTL_EXIT_OK;
}

static int
need(const char *usage, bool have, const char *cmd, const char *flag)
{
    return have ? 0 : ctl_usage_error(usage, "%s needs %s", cmd, flag);
}

/* --replicas UUID,UUID,...: exactly rf ids (rf defaults to their count). */
static int
parse_replicas(struct opts *o, struct vt_meta_cmd *c)
{
    char buf[VT_META_RF_MAX * 40];
    if (strlen(o->replicas) >= sizeof(buf))
        return ctl_usage_error(o->usage, "--replicas: too long (at most %u UUIDs)",
                               VT_META_RF_MAX);
    snprintf(buf, sizeof(buf), "%s", o->replicas);
    unsigned n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (n == VT_META_RF_MAX)
            return ctl_usage_error(o->usage, "--replicas: more than %u UUIDs", VT_META_RF_MAX);
        if (vt_cfg_parse_uuid(tok, strlen(tok), c->u.create.explicit_nodes[n]) != 0)
            return ctl_usage_error(o->usage, "--replicas: '%s' is not a UUID", tok);
        n++;
    }
    if (n == 0)
        return ctl_usage_error(o->usage, "--replicas: no UUIDs");
    if (!o->has_rf)
        c->u.create.rf = (uint8_t)n;
    if (n != c->u.create.rf)
        return ctl_usage_error(o->usage, "--replicas names %u nodes but "
                               "--replication-factor is %u", n, c->u.create.rf);
    c->u.create.n_explicit = (uint8_t)n;
    return 0;
}

static int
build_cmd(struct opts *o, const char *name, struct vt_meta_cmd *c)
{
    int rc;
    memset(c, 0, sizeof(*c));
    if (strcmp(name, "register-node") == 0) {
        if ((rc = need(o->usage, o->has_node, name, "--node UUID")) ||
            (rc = need(o->usage, o->address && *o->address && strlen(o->address) <= VT_META_ADDR_MAX, name,
                       "--addr ADDR (1..256 bytes)")) ||
            (rc = need(o->usage, !o->native_addr || strlen(o->native_addr) <= VT_META_ADDR_MAX, name,
                       "--native-addr ADDR of at most 256 bytes")))
            return rc;
        c->kind = VT_META_CMD_REGISTER_NODE;
        memcpy(c->u.reg.node, o->node, 16);
        c->u.reg.has_expected = o->has_expected_generation;
        c->u.reg.expected_generation = o->expected_generation;
        c->u.reg.addr_len = (uint16_t)strlen(o->address);
        memcpy(c->u.reg.addr, o->address, c->u.reg.addr_len);
        c->u.reg.native_len = o->native_addr ? (uint16_t)strlen(o->native_addr) : 0;
        if (o->native_addr)
            memcpy(c->u.reg.native_addr, o->native_addr, c->u.reg.native_len);
    } else if (strcmp(name, "set-node-state") == 0) {
        static const char *const st[] = {"active", "draining", "dead"};
        int s = -1;
        for (int i = 0; o->state && i < 3; i++)
            if (strcmp(o->state, st[i]) == 0)
                s = i + 1;
        if ((rc = need(o->usage, o->has_node, name, "--node UUID")) ||
            (rc = need(o->usage, s > 0, name, "--state active|draining|dead")) ||
            (rc = need(o->usage, o->has_expected_generation, name, "--expected-generation G")))
            return rc;
        c->kind = VT_META_CMD_SET_NODE_STATE;
        memcpy(c->u.set_state.node, o->node, 16);
        c->u.set_state.state = (uint8_t)s;
        c->u.set_state.expected_generation = o->expected_generation;
    } else if (strcmp(name, "create-topic") == 0) {
        if ((rc = need(o->usage, o->name && vt_meta_topic_name_valid(o->name, strlen(o->name)), name,
                       "--name NAME (1..249 bytes of [A-Za-z0-9._-])")))
            return rc;
        if ((!o->has_topic && (rc = random_uuid(o->topic)) != 0) ||
            (!o->has_root_range && (rc = random_uuid(o->root_range)) != 0))
            return rc;
        c->kind = VT_META_CMD_CREATE_TOPIC;
        memcpy(c->u.create.topic, o->topic, 16);
        memcpy(c->u.create.root_range, o->root_range, 16);
        c->u.create.name_len = (uint8_t)strlen(o->name);
        memcpy(c->u.create.name, o->name, c->u.create.name_len);
        c->u.create.n_ranges = (uint16_t)(o->has_ranges ? o->ranges : 1);
        c->u.create.rf = (uint8_t)(o->has_rf ? o->rf : 1);
        if (o->replicas != NULL && (rc = parse_replicas(o, c)) != 0)
            return rc;
    } else if (strcmp(name, "grant-lease") == 0 || strcmp(name, "release-lease") == 0) {
        bool grant = name[0] == 'g';
        if ((rc = need(o->usage, o->has_range, name, "--range UUID")) ||
            (rc = need(o->usage, o->has_holder, name, "--holder UUID")) ||
            (rc = need(o->usage, grant ? o->has_expected_generation : o->has_epoch, name,
                       grant ? "--expected-generation G" : "--epoch E")))
            return rc;
        c->kind = grant ? VT_META_CMD_GRANT_LEASE : VT_META_CMD_RELEASE_LEASE;
        memcpy(grant ? c->u.grant.range : c->u.release.range, o->range, 16);
        memcpy(grant ? c->u.grant.holder : c->u.release.holder, o->holder, 16);
        if (grant)
            c->u.grant.expected_generation = o->expected_generation;
        else
            c->u.release.epoch = o->epoch;
    } else {
        VT_ASSERT(false);
    }
    return 0;
}

/* ---- range-lease ------------------------------------------------------------------------- */

static int
cmd_range_lease(struct opts *o)
{
    if (!o->has_range)
        return ctl_usage_error(o->usage, "range-lease needs --range UUID");
    uint8_t buf[32];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_lease_encode(&w, o->range);
    struct ctl_meta_answer a;
    int rc = call(o, true, VT_META_ADMIN_K_READ_LEASE, &w, VT_META_ADMIN_K_LEASE_RESP, &a);
    if (rc != 0)
        return rc;
    struct vt_meta_admin_lease l;
    char err[200], holder[37] = "-", deadline[32] = "never";
    if (vt_meta_admin_lease_decode(a.payload, a.len, &l, err, sizeof(err)) != 0) {
        ctl_errorf("%s: undecodable answer: %s", a.server, err);
        return CTL_EXIT_FAIL;
    }
    const struct vt_meta_lease_view *v = &l.view;
    if (v->has_lease)
        uuid_str(v->holder, holder);
    if (v->has_deadline)
        snprintf(deadline, sizeof(deadline), "%" PRId64, v->deadline_ms);
    if (o->json) {
        printf("{\"found\":%s,\"holder\":", v->found ? "true" : "false");
        if (v->has_lease)
            printf("\"%s\"", holder);
        else
            printf("null");
        printf(",\"fencing_epoch\":%" PRIu64 ",\"lease_epoch\":%" PRIu64 ",\"expires_at_ms\":%s"
               ",\"range_generation\":%" PRIu64 ",\"applied_index\":%" PRIu64
               ",\"read_at_applied_index\":%" PRIu64 "}\n",
               v->fencing_epoch, v->lease_epoch, v->has_deadline ? deadline : "null",
               v->range_generation, v->applied_index, l.read_index);
    } else {
        printf("found=%s holder=%s fencing_epoch=%" PRIu64 " lease_epoch=%" PRIu64
               " deadline=%s range_generation=%" PRIu64 " applied_index=%" PRIu64
               " read_index=%" PRIu64 "\n",
               v->found ? "true" : "false", holder, v->fencing_epoch, v->lease_epoch, deadline,
               v->range_generation, v->applied_index, l.read_index);
    }
    return 0;
}

/* ---- dispatch ------------------------------------------------------------------------- */

static const struct ctl_command *find_sub(const char *name);

static int
run(int argc, char **argv)
{
    const char *name = argv[0];
    struct opts o;
    memset(&o, 0, sizeof(o));
    o.usage = ctl_meta__usage(name);
    int rc = parse_opts(argc, argv, find_sub(name)->opts, &o);
    if (rc == 0) {
        if (strcmp(name, "status") == 0 || strcmp(name, "membership") == 0) {
            rc = cmd_status(&o, name[0] == 'm');
        } else if (strcmp(name, "init") == 0) {
            rc = cmd_init(&o);
        } else if (strcmp(name, "range-lease") == 0) {
            rc = cmd_range_lease(&o);
        } else if (strcmp(name, "nodes") == 0) {
            rc = ctl_meta_nodes_print(&o.cfg, o.json);
        } else if (strcmp(name, "register-node") == 0 || strcmp(name, "set-node-state") == 0 ||
                   strcmp(name, "create-topic") == 0 || strcmp(name, "grant-lease") == 0 ||
                   strcmp(name, "release-lease") == 0) {
            struct vt_meta_cmd cmd;
            rc = build_cmd(&o, name, &cmd);
            rc = rc ? rc : propose(&o, &cmd);
        } else {
            rc = cmd_change(&o, name);
        }
    }
    if (o.cfg_loaded)
        ctl_meta_config_free(&o.cfg);
    return rc == HELP_EXIT ? CTL_EXIT_OK : rc;
}

/* ---- the subcommands: flags (their getopt tables) and usage ------------------------ */

/* Every subcommand takes these; proposals also take META_PROPOSAL_OPTS. */
#define META_COMMON_OPTS                                                                  \
    {"config", required_argument, NULL, O_CONFIG},                                        \
        {"endpoint", required_argument, NULL, O_ENDPOINT}, CTL_FORMAT_OPTIONS,            \
        {"help", no_argument, NULL, 'h'}
#define META_PROPOSAL_OPTS                                                                \
    {"request-id", required_argument, NULL, O_REQUEST_ID},                                \
        {"issued-at-ms", required_argument, NULL, O_ISSUED_AT}
#define META_OPT(name, val) {name, required_argument, NULL, val}
#define META_END {NULL, 0, NULL, 0}

static const struct option status_opts[] = {META_COMMON_OPTS, META_END};
static const struct option init_opts[] = {META_COMMON_OPTS, META_OPT("members", O_MEMBERS),
                                          META_END};
static const struct option add_learner_opts[] = {META_COMMON_OPTS, META_OPT("id", O_ID),
                                                 META_OPT("address", O_ADDRESS), META_END};
static const struct option id_opts[] = {META_COMMON_OPTS, META_OPT("id", O_ID), META_END};
static const struct option change_opts[] = {META_COMMON_OPTS, META_OPT("id", O_ID),
                                             META_OPT("role", O_ROLE), META_END};
static const struct option register_opts[] = {
    META_COMMON_OPTS,         META_PROPOSAL_OPTS,           META_OPT("node", O_NODE),
    META_OPT("addr", O_ADDRESS), META_OPT("address", O_ADDRESS), META_OPT("native-addr", O_NATIVE),
    META_OPT("expected-generation", O_GEN), META_END};
static const struct option set_state_opts[] = {
    META_COMMON_OPTS, META_PROPOSAL_OPTS, META_OPT("node", O_NODE), META_OPT("state", O_STATE),
    META_OPT("expected-generation", O_GEN), META_END};
static const struct option create_topic_opts[] = {
    META_COMMON_OPTS,
    META_PROPOSAL_OPTS,
    META_OPT("name", O_NAME),
    META_OPT("ranges", O_RANGES),
    META_OPT("replication-factor", O_RF),
    META_OPT("replicas", O_REPLICAS),
    META_OPT("topic-uuid", O_TOPIC_UUID),
    META_OPT("root-range-uuid", O_ROOT_UUID),
    META_OPT("topic", O_TOPIC),
    META_OPT("root-range", O_ROOT_RANGE),
    META_END};
static const struct option grant_opts[] = {
    META_COMMON_OPTS, META_PROPOSAL_OPTS, META_OPT("range", O_RANGE), META_OPT("holder", O_HOLDER),
    META_OPT("expected-generation", O_GEN), META_END};
static const struct option release_opts[] = {
    META_COMMON_OPTS, META_PROPOSAL_OPTS, META_OPT("range", O_RANGE), META_OPT("holder", O_HOLDER),
    META_OPT("epoch", O_EPOCH), META_END};
static const struct option range_lease_opts[] = {META_COMMON_OPTS, META_OPT("range", O_RANGE),
                                                 META_END};

const struct ctl_command ctl_meta_cmds[] = {
    {"status", run, "this server's raft view", status_opts, NULL},
    {"membership", run, "the leader's voters and learners", status_opts, NULL},
    {"init", run, "bootstrap an empty server with --members", init_opts, NULL},
    {"add-learner", run, "add a server as a learner", add_learner_opts, NULL},
    {"promote", run, "make a learner a voter", id_opts, NULL},
    {"change-membership", run, "set a server's role (voter|learner)", change_opts, NULL},
    {"remove", run, "remove a server (the leader too)", id_opts, NULL},
    {"transfer-leader", run, "hand leadership to a voter", id_opts, NULL},
    {"register-node", run, "propose RegisterNode", register_opts, NULL},
    {"set-node-state", run, "propose SetNodeState", set_state_opts, NULL},
    {"create-topic", run, "propose CreateTopic", create_topic_opts, NULL},
    {"grant-lease", run, "propose GrantRangeLease (administrative)", grant_opts, NULL},
    {"release-lease", run, "propose ReleaseRangeLease", release_opts, NULL},
    {"range-lease", run, "linearizable read of a range's lease", range_lease_opts, NULL},
    {"nodes", run, "linearizable read of every registered node", status_opts, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static const struct ctl_command *
find_sub(const char *name)
{
    for (size_t i = 0; ctl_meta_cmds[i].name != NULL; i++)
        if (strcmp(ctl_meta_cmds[i].name, name) == 0)
            return &ctl_meta_cmds[i];
    VT_ASSERT(false); /* dispatch only runs names of the table */
    return NULL;
}

const char *
ctl_meta_config_default(const char *given)
{
    if (given != NULL)
        return given;
    const char *env = getenv("VTOP_ADMIN_CONFIG");
    if (env != NULL && env[0] != '\0')
        return env;
    static char home_cfg[4096];
    const char *home = getenv("HOME");
    if (home == NULL || home[0] == '\0')
        return NULL;
    snprintf(home_cfg, sizeof(home_cfg), "%s/.config/vtop/admin.yaml", home);
    return access(home_cfg, F_OK) == 0 ? home_cfg : NULL;
}

int
ctl_meta_main(int argc, char **argv)
{
    return ctl_dispatch("vtopctl meta", meta_usage, ctl_meta_cmds, argc, argv);
}
