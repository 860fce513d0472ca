/* The metadata client's edges (see vt_meta_client.h): config checks, the
 * table of built-in request kinds and their answers, and the typed
 * wrappers (Propose, ReadLease) over vt_meta_client_submit. */
#include "vt_meta_client_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_config.h"
#include "vt_frame.h"

/* ---- config ----------------------------------------------------------------------------- */

int
vt_mc__target_parse(struct vt_mc_target *t, const char *addr)
{
    size_t len = strnlen(addr, VT_META_ADMIN_ADDR_MAX + 1);
    struct vt_cfg_hostport hp;
    if (len == 0 || len > VT_META_ADMIN_ADDR_MAX ||
        vt_cfg_parse_hostport(addr, len, &hp, NULL) != 0 || hp.port == 0 ||
        strlen(hp.host) >= sizeof(t->host))
        return -EINVAL;
    uint8_t bin[16];
    if (inet_pton(AF_INET, hp.host, bin) != 1 && inet_pton(AF_INET6, hp.host, bin) != 1)
        return -EINVAL; /* no DNS on a reactor */
    memset(t, 0, sizeof(*t));
    memcpy(t->host, hp.host, strlen(hp.host) + 1); /* length checked above */
    t->port = hp.port;
    memcpy(t->addr, addr, len);
    t->addr[len] = '\0';
    t->ep = -1;
    return 0;
}

static int
endpoints_apply(struct vt_meta_client *cl, const struct vt_meta_client_config *cfg, char *err,
                size_t err_len)
{
    if (cfg->n_endpoints < 1 || cfg->n_endpoints > VT_META_CLIENT_MAX_ENDPOINTS ||
        cfg->endpoints == NULL) {
        snprintf(err, err_len, "endpoints: %u given, 1..%u required", cfg->n_endpoints,
                 VT_META_CLIENT_MAX_ENDPOINTS);
        return -EINVAL;
    }
    for (uint32_t i = 0; i < cfg->n_endpoints; i++) {
        const struct vt_meta_client_endpoint *e = &cfg->endpoints[i];
        struct vt_mc_target *t = &cl->eps[i];
        if (e->addr == NULL || vt_mc__target_parse(t, e->addr) != 0) {
            snprintf(err, err_len, "endpoints[%u].addr: '%s' is not host:port with a numeric "
                     "host and a port 1..65535", i, e->addr ? e->addr : "(null)");
            return -EINVAL;
        }
        if (e->server_name == NULL || strlen(e->server_name) > VT_TLS_CN_MAX ||
            !vt_tls_cn_valid(e->server_name)) {
            snprintf(err, err_len, "endpoints[%u].server_name: '%s' is not a decimal id or UUID",
                     i, e->server_name ? e->server_name : "(null)");
            return -EINVAL;
        }
        snprintf(t->cn, sizeof(t->cn), "%s", e->server_name);
        t->ep = (int)i;
        for (uint32_t j = 0; j < i; j++)
            if (strcmp(cl->eps[j].addr, t->addr) == 0) {
                snprintf(err, err_len, "endpoints[%u].addr: %s repeats endpoints[%u]", i,
                         t->addr, j);
                return -EINVAL;
            }
    }
    cl->n_eps = cfg->n_endpoints;
    return 0;
}

/* 0 -> `def`; otherwise within [lo, hi]. */
static int
bounded(uint32_t v, uint32_t def, uint32_t lo, uint32_t hi, const char *name, uint32_t *out,
        char *err, size_t err_len)
{
    *out = v ? v : def;
    if (*out >= lo && *out <= hi)
        return 0;
    snprintf(err, err_len, "%s: %u is outside %u..%u", name, v, lo, hi);
    return -EINVAL;
}

int
vt_mc__config_apply(struct vt_meta_client *cl, const struct vt_meta_client_config *cfg, char *err,
                    size_t err_len)
{
    uint32_t connect_ms = 0, bmin = 0, bmax = 0;
    if (endpoints_apply(cl, cfg, err, err_len) != 0 ||
        bounded(cfg->request_timeout_ms, 5000, 1, 3600000, "request_timeout_ms",
                &cl->request_timeout_ms, err, err_len) != 0 ||
        bounded(cfg->connect_timeout_ms, 2000, 1, 600000, "connect_timeout_ms", &connect_ms, err,
                err_len) != 0 ||
        bounded(cfg->max_outstanding, 64, 1, VT_META_CLIENT_MAX_OUTSTANDING, "max_outstanding",
                &cl->max_outstanding, err, err_len) != 0 ||
        bounded(cfg->max_payload, VT_META_ADMIN_PAYLOAD_MAX, 64, VT_META_ADMIN_PAYLOAD_MAX,
                "max_payload", &cl->max_payload, err, err_len) != 0 ||
        bounded(cfg->backoff_base_ms, 50, 1, 60000, "backoff_base_ms", &bmin, err, err_len) != 0 ||
        bounded(cfg->backoff_max_ms, 1000, 1, 600000, "backoff_max_ms", &bmax, err, err_len) != 0)
        return -EINVAL;
    if (bmin > bmax) {
        snprintf(err, err_len, "backoff_base_ms: %u is above backoff_max_ms %u", bmin, bmax);
        return -EINVAL;
    }
    if (cfg->tls_ctx == NULL &&
        (cfg->tls.ca_file == NULL || cfg->tls.cert_file == NULL || cfg->tls.key_file == NULL)) {
        snprintf(err, err_len, "tls: give tls_ctx or all of ca_file, cert_file and key_file");
        return -EINVAL;
    }
    cl->on_result = cfg->on_result;
    cl->on_result_arg = cfg->on_result_arg;
    vt_conn_policy_defaults(&cl->pol);
    cl->pol.connect_timeout_ms = connect_ms;
    cl->max_request =
        cl->max_payload < VT_META_ADMIN_REQUEST_MAX ? cl->max_payload : VT_META_ADMIN_REQUEST_MAX;
    uint32_t frame = VT_FRAME_HEADER_BYTES + cl->max_payload;
    cl->pol.in_buf_bytes = 2 * (frame < 1024 ? 1024 : frame);
    uint64_t out = (uint64_t)cl->max_outstanding * (VT_FRAME_HEADER_BYTES + cl->max_request);
    cl->pol.out_buf_max_bytes = out < (64u << 10) ? (64u << 10) : (uint32_t)out;
    cl->pol.out_low_water_bytes = cl->pol.out_buf_max_bytes / 4;
    return 0;
}

/* ---- built-in kinds -------------------------------------------------------------------- */

static int
check_status(const uint8_t *p, size_t len, char *err, size_t err_len)
{
    struct vt_meta_admin_status s;
    return vt_meta_admin_status_decode(p, len, &s, err, err_len);
}

static int
check_propose(const uint8_t *p, size_t len, char *err, size_t err_len)
{
    struct vt_meta_admin_propose_resp r;
    return vt_meta_admin_propose_resp_decode(p, len, &r, err, err_len);
}

static int
check_done(const uint8_t *p, size_t len, char *err, size_t err_len)
{
    struct vt_meta_admin_done d;
    return vt_meta_admin_done_decode(p, len, &d, err, err_len);
}

static int
check_lease(const uint8_t *p, size_t len, char *err, size_t err_len)
{
    struct vt_meta_admin_lease l;
    return vt_meta_admin_lease_decode(p, len, &l, err, err_len);
}

static const struct {
    uint16_t kind, resp_kind;
    vt_meta_client_check_fn *check;
    const char *name;
} kinds[] = {
    {VT_META_ADMIN_K_STATUS, VT_META_ADMIN_K_STATUS_RESP, check_status, "Status"},
    {VT_META_ADMIN_K_PROPOSE, VT_META_ADMIN_K_PROPOSE_RESP, check_propose, "Propose"},
    {VT_META_ADMIN_K_INIT, VT_META_ADMIN_K_DONE, check_done, "Init"},
    {VT_META_ADMIN_K_ADD_LEARNER, VT_META_ADMIN_K_DONE, check_done, "AddLearner"},
    {VT_META_ADMIN_K_CHANGE, VT_META_ADMIN_K_DONE, check_done, "ChangeMembership"},
    {VT_META_ADMIN_K_TRANSFER, VT_META_ADMIN_K_DONE, check_done, "TransferLeader"},
    {VT_META_ADMIN_K_READ_LEASE, VT_META_ADMIN_K_LEASE_RESP, check_lease, "ReadLease"},
};

void
vt_mc__expect(uint16_t kind, uint16_t *resp_kind, vt_meta_client_check_fn **check)
{
    *resp_kind = 0;
    *check = NULL;
    for (size_t i = 0; i < VT_ARRAY_LEN(kinds); i++)
        if (kinds[i].kind == kind) {
            *resp_kind = kinds[i].resp_kind;
            *check = kinds[i].check;
        }
}

const char *
vt_mc__kind_name(uint16_t kind, char *buf, size_t cap)
{
    for (size_t i = 0; i < VT_ARRAY_LEN(kinds); i++)
        if (kinds[i].kind == kind)
            return kinds[i].name;
    snprintf(buf, cap, "kind %u", kind);
    return buf;
}

const char *
vt_meta_client_fail_name(unsigned f)
{
    static const char *const names[VT_META_CLIENT_FAIL_COUNT] = {
        "timeout", "connect", "lost", "protocol", "unauthorized", "remote", "canceled"};
    return f < VT_META_CLIENT_FAIL_COUNT ? names[f] : "unknown";
}

/* ---- generic call ---------------------------------------------------------------------- */

static void
generic_done(void (*ucb)(void), void *uarg, int rc, uint16_t resp_kind, const uint8_t *resp,
             size_t resp_len)
{
    ((vt_meta_client_cb *)ucb)(uarg, rc, resp_kind, resp, resp_len);
}

int
vt_meta_client_call(struct vt_meta_client *cl, uint16_t kind, const void *payload, size_t len,
                    vt_meta_client_cb *cb, void *arg)
{
    VT_ASSERT(cb != NULL);
    struct vt_meta_client_req r = {.kind = kind,
                                   .payload = payload,
                                   .len = len,
                                   .done = generic_done,
                                   .ucb = (void (*)(void))cb,
                                   .uarg = arg};
    vt_mc__expect(kind, &r.resp_kind, &r.check);
    return vt_meta_client_submit(cl, &r);
}

/* ---- Propose --------------------------------------------------------------------------- */

/* What vt_meta_cmd_encode asserts, as an error for the caller. */
static const char *
cmd_invalid(const struct vt_meta_cmd *c)
{
    static const uint8_t nil[VT_META_UUID_BYTES];
    if (memcmp(c->request_id, nil, sizeof(nil)) == 0)
        return "request_id: nil (the dedup key must be unique)";
    switch (c->kind) {
    case VT_META_CMD_REGISTER_NODE: {
        size_t bad;
        if (c->u.reg.addr_len < 1 || c->u.reg.addr_len > VT_META_ADDR_MAX)
            return "reg.addr_len: must be 1..256";
        if (!c->u.reg.has_expected && c->u.reg.expected_generation != 0)
            return "reg.expected_generation: set without has_expected";
        if (vt_codec_utf8_check(c->u.reg.addr, c->u.reg.addr_len, true, &bad) != 0)
            return "reg.addr: not UTF-8 without NUL";
        if (c->u.reg.native_len > VT_META_ADDR_MAX ||
            vt_codec_utf8_check(c->u.reg.native_addr, c->u.reg.native_len, true, &bad) != 0)
            return "reg.native_addr: at most 256 bytes of UTF-8 without NUL";
        return NULL;
    }
    case VT_META_CMD_SET_NODE_STATE:
        return c->u.set_state.state >= VT_META_NODE_ACTIVE &&
                       c->u.set_state.state <= VT_META_NODE_DEAD
                   ? NULL
                   : "set_state.state: not Active, Draining or Dead";
    case VT_META_CMD_CREATE_TOPIC:
        if (!vt_meta_topic_name_valid(c->u.create.name, c->u.create.name_len))
            return "create.name: 1..249 bytes of [A-Za-z0-9._-] required";
        if (c->u.create.n_ranges < 1 || c->u.create.n_ranges > VT_META_TOPIC_RANGES_MAX)
            return "create.n_ranges: must be 1..1024";
        if (c->u.create.rf < 1 || c->u.create.rf > VT_META_RF_MAX)
            return "create.rf: must be 1..7";
        return c->u.create.n_explicit == 0 || c->u.create.n_explicit == c->u.create.rf
                   ? NULL
                   : "create.n_explicit: must be 0 or rf";
    case VT_META_CMD_DELETE_TOPIC:
        return vt_meta_topic_name_valid(c->u.del.name, c->u.del.name_len)
                   ? NULL
                   : "del.name: 1..249 bytes of [A-Za-z0-9._-] required";
    case VT_META_CMD_GRANT_LEASE:
    case VT_META_CMD_RELEASE_LEASE:
    case VT_META_CMD_ACQUIRE_LEASE:
    case VT_META_CMD_RENEW_LEASE: return NULL;
    case VT_META_CMD_RENEW_NODE_LEASES:
        return c->u.renew_node.n >= 1 && c->u.renew_node.n <= VT_META_RENEW_MAX &&
                       c->u.renew_node.entries != NULL
                   ? NULL
                   : "renew_node.n: must be 1..1024 entries";
    default: return "kind: not a metadata command kind";
    }
}

static void
propose_done(void (*ucb)(void), void *uarg, int rc, uint16_t resp_kind, const uint8_t *resp,
             size_t resp_len)
{
    (void)resp_kind;
    vt_meta_client_propose_cb *cb = (vt_meta_client_propose_cb *)ucb;
    struct vt_meta_admin_propose_resp pr;
    if (rc == 0 && vt_meta_admin_propose_resp_decode(resp, resp_len, &pr, NULL, 0) != 0)
        rc = -EPROTO; /* checked before completion: cannot happen */
    cb(uarg, rc, rc == 0 ? pr.index : 0, rc == 0 ? &pr.resp : NULL);
}

int
vt_meta_client_propose(struct vt_meta_client *cl, const struct vt_meta_cmd *cmd,
                       vt_meta_client_propose_cb *cb, void *arg)
{
    VT_ASSERT(cb != NULL && cmd != NULL);
    const char *bad = cmd_invalid(cmd);
    if (bad != NULL) {
        snprintf(cl->last_error, sizeof(cl->last_error), "Propose: %s", bad);
        return -EINVAL;
    }
    uint8_t buf[VT_META_CMD_MAX_BYTES + 8];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_propose_encode(&w, cmd);
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_meta_client_req r = {.kind = VT_META_ADMIN_K_PROPOSE, .payload = buf, .len = w.len,
                                   .resp_kind = VT_META_ADMIN_K_PROPOSE_RESP,
                                   .check = check_propose, .done = propose_done,
                                   .ucb = (void (*)(void))cb, .uarg = arg};
    return vt_meta_client_submit(cl, &r);
}

/* ---- ReadLease: the pattern for more typed reads ---------------------------------------- */

static void
lease_done(void (*ucb)(void), void *uarg, int rc, uint16_t resp_kind, const uint8_t *resp,
           size_t resp_len)
{
    (void)resp_kind;
    struct vt_meta_admin_lease l;
    if (rc == 0 && vt_meta_admin_lease_decode(resp, resp_len, &l, NULL, 0) != 0)
        rc = -EPROTO; /* checked before completion: cannot happen */
    ((vt_meta_client_lease_cb *)ucb)(uarg, rc, rc == 0 ? &l : NULL);
}

int
vt_meta_client_read_lease(struct vt_meta_client *cl, const uint8_t range[VT_META_UUID_BYTES],
                          vt_meta_client_lease_cb *cb, void *arg)
{
    VT_ASSERT(cb != NULL && range != NULL);
    uint8_t buf[VT_META_UUID_BYTES + 8];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_read_lease_encode(&w, range);
    VT_ASSERT(vt_wr_ok(&w));
    struct vt_meta_client_req r = {.kind = VT_META_ADMIN_K_READ_LEASE, .payload = buf,
                                   .len = w.len, .resp_kind = VT_META_ADMIN_K_LEASE_RESP,
                                   .check = check_lease, .done = lease_done,
                                   .ucb = (void (*)(void))cb, .uarg = arg};
    return vt_meta_client_submit(cl, &r);
}
