/* Requests over the blocking client: produce (pipelined), fetch (with the
 * credit top-up), node status, ping; and the mapping of Error frames to
 * -EREMOTEIO. The connection and frame layer is vt_client.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "vt_client_int.h"
#include "vt_codec.h"

int
vt_client__server_error(struct vt_client *c, const struct vt_frame *f, const char *context)
{
    const char *why = NULL;
    if (vt_proto_decode_error(f->payload, f->payload_len, &c->srv_err, &why) != 0)
        return vt_client__fail(c, -EPROTO, "%s with an undecodable Error frame: %s", context,
                               why);
    if (f->request_id == 0)
        c->broken = true; /* about the whole connection: the server closes it */
    return vt_client__fail(c, -EREMOTEIO, "%s: %s (%u)%s%s", context,
                           vt_proto_error_name(c->srv_err.code), c->srv_err.code,
                           c->srv_err.message[0] ? ": " : "", c->srv_err.message);
}

static const char *
kind_name(uint16_t kind)
{
    switch (kind) {
    case VT_K_PRODUCE_RESP: return "ProduceResponse";
    case VT_K_FETCH_RESP: return "FetchResponse";
    case VT_K_PONG: return "Pong";
    case VT_K_NODE_STATUS_RESP: return "NodeStatusResponse";
    default: return "response";
    }
}

int
vt_client_wait_response(struct vt_client *c, uint64_t request_id, uint16_t kind,
                        struct vt_frame *f)
{
    if (c->n_expect == 0)
        return vt_client__fail(c, -EINVAL, "no request is waiting for a response");
    for (;;) {
        int rc = vt_client_recv(c, f);
        if (rc != 0)
            return rc;
        if (f->kind == VT_K_ERROR && f->request_id != request_id) {
            /* Request id 0, or a request sent without a response due: it
             * concerns the connection or an earlier message. */
            rc = vt_client__server_error(c, f, "server error");
            if (f->request_id == 0)
                return rc;
            continue;
        }
        if (f->request_id != request_id)
            return vt_client__fail(c, -EINVAL, "request %" PRIu64 " is not the oldest in "
                                   "flight (got the answer to %" PRIu64 ")",
                                   request_id, f->request_id);
        if (f->kind == VT_K_ERROR)
            return vt_client__server_error(c, f, "server error");
        if (f->kind != kind)
            return vt_client__fail(c, -EPROTO, "expected %s (kind %u) for request %" PRIu64
                                   ", got kind %u", kind_name(kind), kind, request_id, f->kind);
        return 0;
    }
}

/* Encodes a payload into the tx buffer's payload area and sends it. */
static int
send_encoded(struct vt_client *c, uint16_t kind, uint8_t *payload, size_t len,
             bool expect_response, uint64_t *request_id)
{
    if (len > UINT32_MAX)
        return vt_client__fail(c, -EINVAL, "payload too large");
    return vt_client_send(c, kind, payload, (uint32_t)len, expect_response, request_id);
}

int
vt_client_produce_async(struct vt_client *c, const struct vt_produce_req *req,
                        uint64_t *request_id)
{
    /* range (at most 4+249+32) + epoch + durability + batch prefix */
    size_t need = 300 + (size_t)req->batch_len;
    if (need > c->max_frame)
        need = c->max_frame; /* the encoder then reports the overflow */
    int rc = vt_client__tx_reserve(c, VT_FRAME_HEADER_BYTES + need);
    if (rc != 0)
        return rc;
    /* Encode in place after the header; vt_frame_encode moves nothing then. */
    uint8_t *payload = c->tx + VT_FRAME_HEADER_BYTES;
    struct vt_wr w;
    vt_wr_init(&w, payload, need);
    vt_proto_encode_produce(&w, req);
    if (!vt_wr_ok(&w))
        return vt_client__fail(c, -EINVAL, "a produce request with a %" PRIu32 "-byte batch "
                               "does not fit the negotiated max frame of %" PRIu32 " bytes",
                               req->batch_len, c->max_frame);
    return send_encoded(c, VT_K_PRODUCE, payload, w.len, true, request_id);
}

int
vt_client_produce_wait(struct vt_client *c, uint64_t request_id, struct vt_produce_resp *resp)
{
    struct vt_frame f;
    int rc = vt_client_wait_response(c, request_id, VT_K_PRODUCE_RESP, &f);
    if (rc != 0)
        return rc;
    const char *why = NULL;
    if (vt_proto_decode_produce_resp(f.payload, f.payload_len, resp, &why) != 0)
        return vt_client__fail(c, -EPROTO, "bad ProduceResponse: %s", why);
    return 0;
}

int
vt_client_fetch(struct vt_client *c, const struct vt_fetch_req *req, struct vt_fetch_resp *resp)
{
    uint8_t payload[512];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_fetch(&w, req);
    VT_ASSERT(vt_wr_ok(&w));
    uint64_t id;
    int rc = send_encoded(c, VT_K_FETCH, payload, w.len, true, &id);
    if (rc != 0)
        return rc;
    struct vt_frame f;
    rc = vt_client_wait_response(c, id, VT_K_FETCH_RESP, &f);
    if (rc != 0)
        return rc;
    const char *why = NULL;
    if (vt_proto_decode_fetch_resp(f.payload, f.payload_len, resp, &why) != 0)
        return vt_client__fail(c, -EPROTO, "bad FetchResponse: %s", why);
    if (f.payload_len == 0)
        return 0;
    /* Give back the credit this response used. The response payload stays
     * in the receive buffer; only the transmit buffer is touched. */
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_window_update(&w, f.payload_len);
    return send_encoded(c, VT_K_WINDOW_UPDATE, payload, w.len, false, NULL);
}

int
vt_client_node_status(struct vt_client *c, struct vt_node_status_resp *out)
{
    VT_ASSERT(out->ranges != NULL);
    uint64_t id;
    int rc = vt_client_send(c, VT_K_NODE_STATUS, NULL, 0, true, &id);
    if (rc != 0)
        return rc;
    struct vt_frame f;
    rc = vt_client_wait_response(c, id, VT_K_NODE_STATUS_RESP, &f);
    if (rc != 0)
        return rc;
    const char *why = NULL;
    if (vt_proto_decode_node_status_resp(f.payload, f.payload_len, out, &why) != 0)
        return vt_client__fail(c, -EPROTO, "bad NodeStatusResponse: %s", why);
    return 0;
}

int
vt_client_leadership(struct vt_client *c, const struct vt_leadership_req *req,
                     struct vt_leadership_resp *out)
{
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_proto_encode_leadership(&w, req);
    VT_ASSERT(vt_wr_ok(&w));
    uint64_t id;
    int rc = vt_client_send(c, VT_K_LEADERSHIP, buf, (uint32_t)w.len, true, &id);
    if (rc != 0)
        return rc;
    struct vt_frame f;
    rc = vt_client_wait_response(c, id, VT_K_LEADERSHIP_RESP, &f);
    if (rc != 0)
        return rc;
    const char *why = NULL;
    if (vt_proto_decode_leadership_resp(f.payload, f.payload_len, req->op, out, &why) != 0)
        return vt_client__fail(c, -EPROTO, "bad LeadershipResponse: %s", why);
    return 0;
}

int
vt_client_ping(struct vt_client *c)
{
    uint64_t id;
    int rc = vt_client_send(c, VT_K_PING, NULL, 0, true, &id);
    if (rc != 0)
        return rc;
    struct vt_frame f;
    rc = vt_client_wait_response(c, id, VT_K_PONG, &f);
    if (rc == 0 && f.payload_len != 0)
        return vt_client__fail(c, -EPROTO, "Pong with a %" PRIu32 "-byte payload",
                               f.payload_len);
    return rc;
}

int
vt_client_locate(struct vt_client *c, const char *topic, struct vt_locate_resp *out)
{
    VT_ASSERT(out != NULL && out->ranges != NULL && topic != NULL);
    if (!vt_topic_valid(topic, strlen(topic)))
        return vt_client__fail(c, -EINVAL, "locate: bad topic name \"%s\"", topic);
    uint8_t payload[8 + VT_TOPIC_MAX_BYTES];
    struct vt_wr w;
    vt_wr_init(&w, payload, sizeof(payload));
    vt_proto_encode_locate(&w, topic);
    uint64_t id;
    int rc = vt_client_send(c, VT_K_LOCATE, payload, (uint32_t)w.len, true, &id);
    if (rc != 0)
        return rc;
    struct vt_frame f;
    rc = vt_client_wait_response(c, id, VT_K_LOCATE_RESP, &f);
    if (rc != 0)
        return rc;
    const char *why = NULL;
    if (vt_proto_decode_locate_resp(f.payload, f.payload_len, out, &why) != 0)
        return vt_client__fail(c, -EPROTO, "bad LocateResponse: %s", why);
    if (strcmp(out->topic, topic) != 0)
        return vt_client__fail(c, -EPROTO, "LocateResponse for topic \"%s\", asked for \"%s\"",
                               out->topic, topic);
    return 0;
}

int
vt_client_locate_range(struct vt_client *c, const struct vt_range_ident *range,
                       struct vt_range_location *out)
{
    VT_ASSERT(range != NULL && out != NULL);
    struct vt_range_location *locs = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(*locs));
    if (locs == NULL)
        return vt_client__fail(c, -ENOMEM, "locate: out of memory");
    struct vt_locate_resp m = {.ranges = locs};
    int rc = vt_client_locate(c, range->topic, &m);
    if (rc == 0) {
        bool found = false;
        for (uint32_t i = 0; i < m.n_ranges && !found; i++) {
            if (memcmp(locs[i].range_id, range->range_id, 16) == 0 &&
                m.topic_epoch == range->topic_epoch &&
                locs[i].range_generation == range->range_generation) {
                *out = locs[i];
                found = true;
            }
        }
        if (!found)
            rc = vt_client__fail(c, -ENOENT, "locate: topic %s (epoch %" PRIu64 ") has no range "
                                 "with that id", range->topic, m.topic_epoch);
    }
    free(locs);
    return rc;
}

_Static_assert(VT_CLIENT_MAX_RANGE_INDEX + 1 == VT_PROTO_LOCATE_MAX_RANGES,
               "a config's range index covers every range a Locate can list");

/* The range numbered `index` in a Locate answer of `topic`. */
static int
pick_index(struct vt_client *c, const char *topic, uint32_t index, const struct vt_locate_resp *m,
           struct vt_range_ident *ident, struct vt_range_location *out)
{
    uint32_t count = m->ranges[0].count;
    if (index >= count)
        return vt_client__fail(c, -ENOENT,
                               "topic %s has %" PRIu32 " range(s) (index 0..%" PRIu32
                               "): there is no range index %" PRIu32,
                               topic, count, count - 1, index);
    for (uint32_t i = 0; i < m->n_ranges; i++) {
        if (m->ranges[i].index != index)
            continue;
        memset(ident, 0, sizeof(*ident));
        snprintf(ident->topic, sizeof(ident->topic), "%s", topic);
        ident->topic_epoch = m->topic_epoch;
        memcpy(ident->range_id, m->ranges[i].range_id, 16);
        ident->range_generation = m->ranges[i].range_generation;
        *out = m->ranges[i];
        return 0;
    }
    return vt_client__fail(c, -ENOENT,
                           "topic %s has %" PRIu32 " range(s) but node %s's Locate "
                           "answer lists no range index %" PRIu32 " (it listed %" PRIu32 ")",
                           topic, count, c->session.node_id, index, m->n_ranges);
}

int
vt_client_range_resolve(struct vt_client *c, const struct vt_client_config *cfg,
                        struct vt_range_ident *ident, struct vt_range_location *out)
{
    VT_ASSERT(cfg != NULL && ident != NULL && out != NULL);
    if (cfg->range_form == VT_CLIENT_RANGE_NONE)
        return vt_client__fail(c, -EINVAL,
                               "no range named: the client config has no `range:` "
                               "(add one, or pass --topic NAME [--range-index N])");
    if (cfg->range_form == VT_CLIENT_RANGE_BY_ID) {
        int rc = vt_client_locate_range(c, &cfg->range_ident, out);
        if (rc == 0)
            *ident = cfg->range_ident;
        return rc;
    }
    const char *topic = cfg->range_ident.topic;
    struct vt_range_location *locs = calloc(VT_PROTO_LOCATE_MAX_RANGES, sizeof(*locs));
    if (locs == NULL)
        return vt_client__fail(c, -ENOMEM, "locate: out of memory");
    struct vt_locate_resp m = {.ranges = locs};
    int rc = vt_client_locate(c, topic, &m);
    if (rc == -EREMOTEIO && !c->broken && c->srv_err.code == VT_E_WRONG_RANGE)
        rc = vt_client__fail(c, -ENOENT, "topic %s is unknown to node %s: %s", topic,
                             c->session.node_id, c->srv_err.message);
    else if (rc == 0)
        rc = pick_index(c, topic, cfg->range.index, &m, ident, out);
    free(locs);
    return rc;
}
