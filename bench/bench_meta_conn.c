/* `vtop-bench meta` connections: the client TLS context, leader discovery
 * with Status, and non-blocking TLS connections to the leader's admin
 * listener (see bench_meta.h; connections: runtime/vt_tls_client.h). The
 * server's certificate must chain to tls.ca and carry exactly one CN, a
 * decimal id; a leader's must be its id. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench_meta.h"
#include "vt_clock.h"
#include "vt_config.h"
#include "vt_frame.h"

void
vt_bm_note(struct vt_bm_run *run, const char *fmt, ...)
{
    if (run->first_error[0] != '\0')
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(run->first_error, sizeof(run->first_error), fmt, ap);
    va_end(ap);
}

int
vt_bm_tls_init(struct vt_bm_run *run)
{
    struct vt_tls_files files = vt_cfg_tls_files(&run->cfg.tls);
    char err[VT_TLS_CLIENT_ERR_BYTES];
    run->tls_ctx = vt_tls_client_ctx_new(&files, err, sizeof(err));
    if (run->tls_ctx == NULL) {
        vt_bm_note(run, "%s", err);
        return -EINVAL;
    }
    return 0;
}

/* TCP + TLS 1.3 to addr (blocking, within connect_timeout); the server CN
 * must be want_id (0: any meta node id). The connection stays non-blocking.
 * 0 or -errno with why ("ADDR: ..."). */
static int
tls_open(struct vt_bm_run *run, const char *addr, uint64_t want_id, struct vt_tls_client **out,
         char *why, size_t why_len)
{
    struct vt_cfg_hostport hp;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, NULL) != 0) {
        snprintf(why, why_len, "%s: not host:port", addr);
        return -EINVAL;
    }
    char want[24];
    snprintf(want, sizeof(want), "%llu", (unsigned long long)want_id);
    struct vt_tls_client_opts o = {.host = hp.host,
                                   .port = hp.port,
                                   .expected_cn = want_id != 0 ? want : NULL,
                                   .decimal_cn = true,
                                   .expected_label =
                                       want_id != 0 ? "the leader's id" : "a meta node id",
                                   .deadline_ms = vt_clock_mono_ms() + run->cfg.connect_timeout_ms};
    enum vt_tls_refusal ref;
    char err[VT_TLS_CLIENT_ERR_BYTES];
    int rc = vt_tls_client_connect(run->tls_ctx, &o, out, &ref, err, sizeof(err));
    if (rc != 0 && ref == VT_TLS_REFUSAL_CONNECT)
        snprintf(why, why_len, "%s", err); /* it names the address */
    else if (rc != 0)
        snprintf(why, why_len, "%s: %s", addr, err);
    return rc;
}

/* One blocking Status exchange on a fresh connection. */
static int
status_of(struct vt_bm_run *run, const char *addr, uint64_t want_id,
          struct vt_meta_admin_status *st, char *why, size_t why_len)
{
    struct vt_tls_client *tls = NULL;
    int rc = tls_open(run, addr, want_id, &tls, why, why_len);
    if (rc != 0)
        return rc;
    uint64_t deadline = vt_clock_mono_ms() + run->cfg.connect_timeout_ms;
    uint8_t buf[VT_META_ADMIN_FRAME_MAX];
    size_t n = vt_frame_encode(buf, sizeof(buf), VT_META_ADMIN_K_STATUS, 1, 0, NULL, 0);
    VT_ASSERT(n > 0);
    rc = vt_tls_client_write(tls, buf, n, deadline, "sending Status");
    if (rc == 0)
        rc =
            vt_tls_client_read(tls, buf, VT_FRAME_HEADER_BYTES, deadline, "waiting for StatusResp");
    uint32_t plen = rc == 0 ? vt_be32_get(buf + VT_FRAME_OFF_PAYLOAD_LEN) : 0;
    if (rc == 0 && plen <= VT_META_ADMIN_PAYLOAD_MAX)
        rc = vt_tls_client_read(tls, buf + VT_FRAME_HEADER_BYTES, plen, deadline,
                                "waiting for StatusResp");
    struct vt_frame f;
    const char *fwhy = NULL;
    char err[200] = "";
    if (rc != 0) {
        snprintf(why, why_len, "%s: Status: %s", addr, vt_tls_client_last_error(tls));
    } else if (plen > VT_META_ADMIN_PAYLOAD_MAX ||
               vt_frame_decode_exact(buf, VT_FRAME_HEADER_BYTES + plen, VT_META_ADMIN_FRAME_MAX, &f,
                                     &fwhy) != 0 ||
               f.kind != VT_META_ADMIN_K_STATUS_RESP ||
               vt_meta_admin_status_decode(f.payload, f.payload_len, st, err, sizeof(err)) != 0) {
        rc = -EPROTO;
        snprintf(why, why_len, "%s: Status: %s", addr,
                 fwhy     ? fwhy
                 : err[0] ? err
                          : "not a StatusResp");
    }
    vt_tls_client_close(tls);
    return rc;
}

static void
nap_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int
vt_bm_find_leader(struct vt_bm_run *run)
{
    uint64_t deadline = vt_clock_mono_ms() + run->cfg.request_timeout_ms;
    char why[600] = "no endpoint tried";
    while (vt_clock_mono_ms() < deadline) {
        for (uint32_t i = 0; i < run->cfg.n_endpoints; i++) {
            struct vt_meta_admin_status st;
            if (status_of(run, run->cfg.endpoints[i], 0, &st, why, sizeof(why)) != 0)
                continue;
            const char *addr = run->cfg.endpoints[i];
            if (st.state != 3 && st.leader_id != 0 && st.leader_admin[0] != '\0') {
                addr = st.leader_admin; /* follow the redirect, then confirm */
                if (status_of(run, addr, st.leader_id, &st, why, sizeof(why)) != 0)
                    continue;
            }
            if (st.state == 3 && st.ready) {
                snprintf(run->leader, sizeof(run->leader), "%s", addr);
                run->leader_id = st.node_id;
                return 0;
            }
            snprintf(why, sizeof(why), "%s: state %s, ready %d, leader %llu", addr,
                     vt_meta_admin_state_name(st.state), st.ready,
                     (unsigned long long)st.leader_id);
        }
        nap_ms(200);
    }
    vt_bm_note(run, "no ready leader found within %llu ms; last: %s",
               (unsigned long long)run->cfg.request_timeout_ms, why);
    return -ETIMEDOUT;
}

int
vt_bm_conn_open(struct vt_bm_run *run, struct vt_bm_conn *c)
{
    VT_ASSERT(c->tls == NULL && c->n_busy == 0);
    char why[600];
    int rc = tls_open(run, run->leader, run->leader_id, &c->tls, why, sizeof(why));
    if (rc != 0) {
        vt_bm_note(run, "connection %u: %s", c->idx, why);
        return rc;
    }
    snprintf(c->addr, sizeof(c->addr), "%s", run->leader);
    c->in_len = 0;
    c->out_len = 0;
    c->reconnect = false;
    return 0;
}

void
vt_bm_conn_close(struct vt_bm_conn *c)
{
    vt_tls_client_close(c->tls); /* close_notify only if healthy; never waits */
    c->tls = NULL;
}

int
vt_bm_conn_queue(struct vt_bm_conn *c, uint16_t kind, uint64_t rid, const uint8_t *payload,
                 size_t len)
{
    if (c->out_len + VT_FRAME_HEADER_BYTES + len > sizeof(c->out))
        return -ENOBUFS;
    size_t n = vt_frame_encode(c->out + c->out_len, sizeof(c->out) - c->out_len, kind, rid, 0,
                               payload, (uint32_t)len);
    VT_ASSERT(n == VT_FRAME_HEADER_BYTES + len);
    c->out_len += n;
    return 0;
}

int
vt_bm_conn_flush(struct vt_bm_conn *c)
{
    while (c->out_len > 0) {
        /* After -EAGAIN c->out still starts with the bytes offered, as the
         * retry needs: it only grows until they are written. */
        ssize_t r = vt_tls_client_write_some(c->tls, c->out, c->out_len, VT_TLS_CLIENT_NO_WAIT,
                                             "sending proposals");
        if (r == -EAGAIN)
            return 0;
        if (r < 0)
            return -ECONNRESET;
        memmove(c->out, c->out + r, c->out_len - (size_t)r);
        c->out_len -= (size_t)r;
    }
    return 0;
}

int
vt_bm_conn_fill(struct vt_bm_conn *c)
{
    while (c->in_len < sizeof(c->in)) {
        ssize_t r = vt_tls_client_read_some(c->tls, c->in + c->in_len, sizeof(c->in) - c->in_len,
                                            VT_TLS_CLIENT_NO_WAIT, "reading answers");
        if (r == -EAGAIN)
            return 0;
        if (r < 0)
            return -ECONNRESET;
        c->in_len += (size_t)r;
    }
    return 0;
}
