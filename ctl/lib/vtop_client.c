/* libvtop: the client object, error names and topic lookup (vtop/vtop.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_build.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_proto.h"
#include "vtop_ctl.h"
#include "vtop_int.h"

const char *
vtop_version(void)
{
    static char v[96];
    if (v[0] == '\0')
        snprintf(v, sizeof(v), "%s (build %s)", vt_build_version(), vt_build_id());
    return v;
}

const char *
vtop_err_name(int err)
{
    switch (err) {
    case VTOP_OK: return "VTOP_OK";
    case VTOP_ERR_CONFIG: return "VTOP_ERR_CONFIG";
    case VTOP_ERR_INVALID: return "VTOP_ERR_INVALID";
    case VTOP_ERR_UNREACHABLE: return "VTOP_ERR_UNREACHABLE";
    case VTOP_ERR_TLS: return "VTOP_ERR_TLS";
    case VTOP_ERR_UNKNOWN_TOPIC: return "VTOP_ERR_UNKNOWN_TOPIC";
    case VTOP_ERR_QUEUE_FULL: return "VTOP_ERR_QUEUE_FULL";
    case VTOP_ERR_TOO_LARGE: return "VTOP_ERR_TOO_LARGE";
    case VTOP_ERR_FENCED: return "VTOP_ERR_FENCED";
    case VTOP_ERR_REFUSED: return "VTOP_ERR_REFUSED";
    case VTOP_ERR_TIMEOUT: return "VTOP_ERR_TIMEOUT";
    case VTOP_ERR_PROTOCOL: return "VTOP_ERR_PROTOCOL";
    case VTOP_ERR_OFFSET_GONE: return "VTOP_ERR_OFFSET_GONE";
    case VTOP_ERR_CLOSED: return "VTOP_ERR_CLOSED";
    case VTOP_ERR_NOMEM: return "VTOP_ERR_NOMEM";
    default: return "unknown";
    }
}

bool
vtop_err_retryable(int err)
{
    return err == VTOP_ERR_UNREACHABLE || err == VTOP_ERR_QUEUE_FULL || err == VTOP_ERR_TIMEOUT;
}

int
vtop__fail(char *buf, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, VTOP__ERR_BYTES, fmt, ap);
    va_end(ap);
    return code;
}

uint64_t
vtop__now_ms(void)
{
    return vt_clock_mono_ms();
}

int
vtop__map(int rc, const struct vt_client *conn)
{
    switch (rc) {
    case 0: return VTOP_OK;
    case -ENOMEM: return VTOP_ERR_NOMEM;
    case -EACCES: return VTOP_ERR_TLS;
    case -EINVAL: return conn == NULL ? VTOP_ERR_CONFIG : VTOP_ERR_INVALID;
    case -ENOENT: return VTOP_ERR_UNKNOWN_TOPIC;
    case -EPROTO:
        /* a TLS failure while connecting, or a broken stream */
        return conn == NULL ? VTOP_ERR_TLS : VTOP_ERR_PROTOCOL;
    case -EREMOTEIO: {
        if (conn == NULL)
            return VTOP_ERR_REFUSED;
        const struct vt_error_msg *e = vt_client_server_error(conn);
        if (e->code == VT_E_PRODUCER_FENCED)
            return VTOP_ERR_FENCED;
        if (e->code == VT_E_UNAUTHORIZED)
            return VTOP_ERR_TLS;
        if (e->code == VT_E_WRONG_RANGE)
            return VTOP_ERR_UNKNOWN_TOPIC;
        return e->retryable ? VTOP_ERR_UNREACHABLE : VTOP_ERR_REFUSED;
    }
    default: return VTOP_ERR_UNREACHABLE; /* connect refused, reset, timed out */
    }
}

int
vtop_client_new(const char *config_path, vtop_client **out, char *err, size_t err_len)
{
    char none[1];
    if (err == NULL || err_len == 0) {
        err = none;
        err_len = sizeof(none);
    }
    err[0] = '\0';
    *out = NULL;
    const char *path = vt_client_config_default_path(config_path);
    if (path == NULL) {
        snprintf(err, err_len, "no client config: pass a path, set $VTOP_CONFIG, or create "
                 "~/.config/vtop/vtop.yaml");
        return VTOP_ERR_CONFIG;
    }
    vtop_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        snprintf(err, err_len, "out of memory");
        return VTOP_ERR_NOMEM;
    }
    struct vt_cfg_error ce;
    if (vt_client_config_load(path, &c->cfg, &ce) != 0) {
        snprintf(err, err_len, "%s", ce.msg);
        free(c);
        return VTOP_ERR_CONFIG;
    }
    int rc = vtop__connect(c);
    if (rc != VTOP_OK) {
        snprintf(err, err_len, "%s", c->err);
        vtop_client_free(c);
        return rc;
    }
    *out = c;
    return VTOP_OK;
}

int
vtop_client_adopt(struct vt_client_config *cfg, vtop_client **out, char *err, size_t err_len)
{
    *out = NULL;
    vtop_client *c = calloc(1, sizeof(*c));
    if (c == NULL) {
        vt_client_config_free(cfg);
        snprintf(err, err_len, "out of memory");
        return VTOP_ERR_NOMEM;
    }
    c->cfg = *cfg;
    memset(cfg, 0, sizeof(*cfg));
    int rc = vtop__connect(c);
    if (rc != VTOP_OK) {
        snprintf(err, err_len, "%s", c->err);
        vtop_client_free(c);
        return rc;
    }
    *out = c;
    return VTOP_OK;
}

int
vtop_client_config_range(vtop_client *c, struct vt_range_ident *ident)
{
    int rc = vtop__connect(c);
    if (rc != VTOP_OK)
        return rc;
    struct vt_range_location loc;
    rc = vt_client_range_resolve(c->conn, &c->cfg, ident, &loc);
    if (rc != 0)
        return vtop__fail(c->err, vtop__map(rc, c->conn), "%s", vt_client_last_error(c->conn));
    return VTOP_OK;
}

void
vtop_client_free(vtop_client *c)
{
    if (c == NULL)
        return;
    vt_client_close(c->conn);
    vt_client_config_free(&c->cfg);
    free(c);
}

const char *
vtop_client_error(const vtop_client *c)
{
    return c->err;
}

int
vtop__connect(vtop_client *c)
{
    if (c->conn != NULL && !vt_client_broken(c->conn))
        return VTOP_OK;
    vt_client_close(c->conn);
    c->conn = NULL;
    uint32_t n = 1 + c->cfg.n_nodes;
    int first = VTOP_OK;
    char errs[VTOP__ERR_BYTES] = "";
    size_t used = 0;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = (c->next_node + k) % n;
        c->dial.cfg = c->cfg;
        if (i > 0) {
            c->dial.cfg.addr = c->cfg.nodes[i - 1].addr;
            c->dial.cfg.server_name = c->cfg.nodes[i - 1].server_name;
        }
        char err[600];
        int rc = vt_client_connect(&c->dial.cfg, VT_ROLE_PRODUCER, &c->conn, err, sizeof(err));
        if (rc == 0) {
            c->next_node = i;
            return VTOP_OK;
        }
        int code = vtop__map(rc, NULL);
        if (first == VTOP_OK || first == VTOP_ERR_UNREACHABLE)
            first = code; /* report a certificate problem over an unreachable node */
        int w = snprintf(errs + used, sizeof(errs) - used, "%s%s:%u: %s", k ? "; " : "",
                         c->dial.cfg.addr.host, c->dial.cfg.addr.port, err);
        if (w > 0 && (size_t)w < sizeof(errs) - used)
            used += (size_t)w;
    }
    return vtop__fail(c->err, first, "no node of the config answered: %s", errs);
}

/* Locate `topic` on the connection, once more after reconnecting when the
 * connection turned out to be lost. */
static int
locate(vtop_client *c, const char *topic, struct vt_locate_resp *resp)
{
    for (int attempt = 0;; attempt++) {
        int rc = vtop__connect(c);
        if (rc != VTOP_OK)
            return rc;
        rc = vt_client_locate(c->conn, topic, resp);
        if (rc == 0)
            return VTOP_OK;
        int code = vtop__map(rc, c->conn);
        if (code == VTOP_ERR_UNKNOWN_TOPIC)
            return vtop__fail(c->err, code, "topic \"%s\" is unknown to the cluster (node %s)",
                              topic, vt_client_session(c->conn)->node_id);
        if (!vt_client_broken(c->conn) || attempt > 0)
            return vtop__fail(c->err, code, "locating topic \"%s\": %s", topic,
                              vt_client_last_error(c->conn));
    }
}

static int
check_topic(vtop_client *c, const char *topic)
{
    size_t n = topic ? strlen(topic) : 0;
    if (n == 0 || n > VT_TOPIC_MAX_BYTES)
        return vtop__fail(c->err, VTOP_ERR_INVALID, "topic name must be 1..%u bytes",
                          VT_TOPIC_MAX_BYTES);
    for (size_t i = 0; i < n; i++) {
        char ch = topic[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return vtop__fail(c->err, VTOP_ERR_INVALID, "topic name \"%.64s\": byte %zu is not "
                              "one of [A-Za-z0-9._-]", topic, i);
    }
    return VTOP_OK;
}

int
vtop_topic_ranges(vtop_client *c, const char *topic, struct vtop_range_info *out, size_t cap,
                  size_t *n)
{
    *n = 0;
    int rc = check_topic(c, topic);
    if (rc != VTOP_OK)
        return rc;
    struct vt_range_location *ranges = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(*ranges));
    if (ranges == NULL)
        return vtop__fail(c->err, VTOP_ERR_NOMEM, "out of memory");
    struct vt_locate_resp resp = {.ranges = ranges};
    rc = locate(c, topic, &resp);
    if (rc == VTOP_OK) {
        *n = resp.n_ranges;
        for (uint32_t i = 0; i < resp.n_ranges && i < cap; i++) {
            const struct vt_range_location *l = &ranges[i];
            struct vtop_range_info *o = &out[i];
            memset(o, 0, sizeof(*o));
            o->index = l->index;
            vt_uuid_format(l->range_id, o->range_id);
            if (l->has_leader) {
                vt_uuid_format(l->leader, o->leader_id);
                snprintf(o->leader_addr, sizeof(o->leader_addr), "%s", l->leader_addr);
            }
            o->fencing_epoch = l->fencing_epoch;
        }
    }
    free(ranges);
    return rc;
}

int
vtop__resolve(vtop_client *c, const char *topic, uint32_t index, struct vt_range_ident *ident)
{
    int rc = check_topic(c, topic);
    if (rc != VTOP_OK)
        return rc;
    struct vt_range_location *ranges = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(*ranges));
    if (ranges == NULL)
        return vtop__fail(c->err, VTOP_ERR_NOMEM, "out of memory");
    struct vt_locate_resp resp = {.ranges = ranges};
    rc = locate(c, topic, &resp);
    if (rc == VTOP_OK) {
        rc = vtop__fail(c->err, VTOP_ERR_UNKNOWN_TOPIC, "topic \"%s\" has %" PRIu32 " ranges: "
                        "there is no range %" PRIu32, topic, resp.n_ranges, index);
        for (uint32_t i = 0; i < resp.n_ranges; i++) {
            if (ranges[i].index != index)
                continue;
            memset(ident, 0, sizeof(*ident));
            snprintf(ident->topic, sizeof(ident->topic), "%s", topic);
            ident->topic_epoch = resp.topic_epoch;
            memcpy(ident->range_id, ranges[i].range_id, 16);
            ident->range_generation = ranges[i].range_generation;
            c->err[0] = '\0';
            rc = VTOP_OK;
            break;
        }
    }
    free(ranges);
    return rc;
}
