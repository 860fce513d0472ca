/* The blocking metadata admin client (see ctl_meta_client.h): admin.yaml,
 * one request per connection (runtime/vt_tls_client.h) and NotLeader-following
 * requests. */
#include "ctl_meta_client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ctl.h"
#include "vt_clock.h"
#include "vt_frame.h"
#include "vt_tls_client.h"

#define MAX_HOPS 8

/* ---- admin.yaml ---------------------------------------------------------------- */

int
ctl_meta_config_load(const char *path, struct vt_meta_admin_config *cfg)
{
    struct vt_cfg_error err;
    if (vt_meta_admin_config_load(path, cfg, &err) != 0) {
        ctl_errorf("%s", err.msg);
        return CTL_EXIT_USAGE;
    }
    return 0;
}

void
ctl_meta_config_free(struct vt_meta_admin_config *cfg)
{
    vt_meta_admin_config_free(cfg);
}

/* ---- one connection ---------------------------------------------------------------- */

struct conn {
    struct vt_tls_client *tls;
    char why[600]; /* "ADDR: what went wrong" */
};

/* TCP + TLS 1.3 to `addr`; the server CN must be `want_cn` (the leader's id
 * after a redirect) or else any meta node id (decimal, >= 1). */
static int
conn_open(struct conn *c, const struct vt_tls_client_ctx *ctx,
          const struct vt_meta_admin_config *cfg, const char *addr, const char *want_cn)
{
    *c = (struct conn){.tls = NULL};
    struct vt_cfg_hostport hp;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, NULL) != 0) {
        snprintf(c->why, sizeof(c->why), "%s: bad address", addr);
        return -EINVAL;
    }
    struct vt_tls_client_opts o = {.host = hp.host,
                                   .port = hp.port,
                                   .expected_cn = want_cn,
                                   .decimal_cn = true,
                                   .expected_label = want_cn ? "the leader's id" : "a meta node id",
                                   .deadline_ms = vt_clock_mono_ms() + cfg->connect_timeout_ms};
    enum vt_tls_refusal ref;
    char err[VT_TLS_CLIENT_ERR_BYTES];
    int rc = vt_tls_client_connect(ctx, &o, &c->tls, &ref, err, sizeof(err));
    if (rc != 0 && ref == VT_TLS_REFUSAL_CONNECT)
        snprintf(c->why, sizeof(c->why), "%s", err); /* it names the address */
    else if (rc != 0)
        snprintf(c->why, sizeof(c->why), "%s: %s", addr, err);
    return rc;
}

static int
conn_fail(struct conn *c, const char *addr, int rc)
{
    snprintf(c->why, sizeof(c->why), "%s: %s", addr, vt_tls_client_last_error(c->tls));
    return rc;
}

/* Sends one frame and reads the answer frame into *ans, both within
 * connect_timeout. */
static int
exchange(struct conn *c, const struct vt_meta_admin_config *cfg, const char *addr, uint16_t kind,
         const uint8_t *payload, size_t len, struct ctl_meta_answer *ans)
{
    static uint64_t next_id = 1;
    uint64_t rid = next_id++;
    uint64_t deadline = vt_clock_mono_ms() + cfg->connect_timeout_ms;
    uint8_t out[VT_META_ADMIN_FRAME_MAX];
    size_t n = vt_frame_encode(out, sizeof(out), kind, rid, 0, payload, (uint32_t)len);
    VT_ASSERT(n > 0);
    int rc = vt_tls_client_write(c->tls, out, n, deadline, "sending the request");
    uint8_t in[VT_META_ADMIN_FRAME_MAX];
    if (rc == 0)
        rc = vt_tls_client_read(c->tls, in, VT_FRAME_HEADER_BYTES, deadline,
                                "waiting for the answer");
    if (rc != 0)
        return conn_fail(c, addr, rc);
    uint32_t plen = vt_be32_get(in + VT_FRAME_OFF_PAYLOAD_LEN);
    if (plen > VT_META_ADMIN_PAYLOAD_MAX) {
        snprintf(c->why, sizeof(c->why), "%s: answer payload of %u bytes is over the limit", addr,
                 plen);
        return -EPROTO;
    }
    rc = vt_tls_client_read(c->tls, in + VT_FRAME_HEADER_BYTES, plen, deadline,
                            "waiting for the answer");
    if (rc != 0)
        return conn_fail(c, addr, rc);
    struct vt_frame f;
    const char *why = NULL;
    if (vt_frame_decode_exact(in, VT_FRAME_HEADER_BYTES + plen, VT_META_ADMIN_FRAME_MAX, &f,
                              &why) != 0 || f.request_id != rid) {
        snprintf(c->why, sizeof(c->why), "%s: bad answer frame: %s", addr,
                 why ? why : "wrong request id");
        return -EPROTO;
    }
    ans->kind = f.kind;
    ans->len = f.payload_len;
    memcpy(ans->payload, f.payload, f.payload_len);
    if (f.kind == VT_META_ADMIN_K_ERROR) {
        char err[200];
        if (vt_meta_admin_error_decode(f.payload, f.payload_len, &ans->err, err, sizeof(err)) !=
            0) {
            snprintf(c->why, sizeof(c->why), "%s: undecodable Error answer: %s", addr, err);
            return -EPROTO;
        }
    }
    return 0;
}

/* ---- requests with redirects ----------------------------------------------------------- */

static void
nap_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int
ask(const struct vt_meta_admin_config *cfg, const struct vt_tls_client_ctx *ctx,
    const char *addr, const char *want_cn, uint16_t kind, const uint8_t *payload, size_t len,
    struct ctl_meta_answer *ans, char *why, size_t why_len)
{
    struct conn c;
    int rc = conn_open(&c, ctx, cfg, addr, want_cn);
    if (rc == 0)
        rc = exchange(&c, cfg, addr, kind, payload, len, ans);
    if (rc != 0)
        snprintf(why, why_len, "%s", c.why);
    else
        snprintf(ans->server, sizeof(ans->server), "%s", addr);
    vt_tls_client_close(c.tls);
    return rc;
}

static int
call(const struct vt_meta_admin_config *cfg, const struct vt_tls_client_ctx *ctx, bool follow,
     uint16_t kind, const uint8_t *payload, size_t len, struct ctl_meta_answer *ans)
{
    char why[600] = "";
    if (!follow) {
        int rc = ask(cfg, ctx, cfg->endpoints[0], NULL, kind, payload, len, ans, why,
                     sizeof(why));
        if (rc != 0)
            ctl_errorf("%s", why);
        return rc;
    }
    uint64_t deadline = vt_clock_mono_ms() + cfg->request_timeout_ms;
    uint32_t next = 0, hops = 0;
    char target[VT_META_ADMIN_ADDR_MAX + 1] = "", cn[24] = "";
    int rc = -ETIMEDOUT;
    while (vt_clock_mono_ms() < deadline) {
        bool redirected = target[0] != '\0';
        const char *addr = redirected ? target : cfg->endpoints[next % cfg->n_endpoints];
        rc = ask(cfg, ctx, addr, redirected ? cn : NULL, kind, payload, len, ans, why,
                 sizeof(why));
        target[0] = '\0';
        if (rc == 0 && ans->kind != VT_META_ADMIN_K_ERROR)
            return 0;
        if (rc == 0 && ans->err.code == VT_META_ADMIN_E_NOT_LEADER &&
            ans->err.leader_admin[0] != '\0' && hops < MAX_HOPS) {
            hops++;
            snprintf(target, sizeof(target), "%s", ans->err.leader_admin);
            snprintf(cn, sizeof(cn), "%llu", (unsigned long long)ans->err.leader_id);
            continue;
        }
        if (rc == 0 && ans->err.code != VT_META_ADMIN_E_NOT_LEADER &&
            ans->err.code != VT_META_ADMIN_E_UNAVAILABLE)
            return 0; /* a definite answer */
        if (rc == 0)
            snprintf(why, sizeof(why), "%s: %s: %s", addr,
                     vt_meta_admin_error_name(ans->err.code), ans->err.msg);
        if (!redirected)
            next++;
        if (!redirected && next % cfg->n_endpoints == 0)
            nap_ms(200); /* every endpoint tried: an election may be running */
    }
    if (rc == 0)
        return 0; /* the last answer (NotLeader / Unavailable) is the caller's to print */
    ctl_errorf("no meta server answered within %llu ms; last: %s",
               (unsigned long long)cfg->request_timeout_ms, why);
    return rc;
}

int
ctl_meta_call(const struct vt_meta_admin_config *cfg, bool follow, uint16_t kind,
              const uint8_t *payload, size_t len, struct ctl_meta_answer *ans)
{
    struct vt_tls_files files = vt_cfg_tls_files(&cfg->tls);
    char err[VT_TLS_CLIENT_ERR_BYTES];
    struct vt_tls_client_ctx *ctx = vt_tls_client_ctx_new(&files, err, sizeof(err));
    if (ctx == NULL) {
        ctl_errorf("%s", err);
        return -EINVAL;
    }
    int rc = call(cfg, ctx, follow, kind, payload, len, ans);
    vt_tls_client_ctx_free(ctx);
    return rc;
}
