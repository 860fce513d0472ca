/* Reaching a range's leader (vt_client_dial.h). */
#include "vt_client_dial.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_config.h"

void
vt_client_sleep_ms(uint64_t ms, volatile const int *stop)
{
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && (stop == NULL || !*stop)) {
    }
}

int
vt_client_dial_addr(struct vt_client_dial *d, const struct vt_client_config *base, const char *addr,
                    const char *name, uint8_t role, struct vt_client **out, char *err,
                    size_t err_len)
{
    struct vt_cfg_hostport hp;
    const char *why = "";
    *out = NULL;
    if (vt_cfg_parse_hostport(addr, strlen(addr), &hp, &why) != 0) {
        snprintf(err, err_len, "the node named leader address \"%.256s\": %.100s", addr, why);
        return -EINVAL;
    }
    d->cfg = *base;
    d->cfg.addr = hp;
    if (name != NULL) {
        snprintf(d->name, sizeof(d->name), "%s", name);
        d->cfg.server_name = d->name;
    }
    return vt_client_connect(&d->cfg, role, out, err, err_len);
}

/* Connected to some node: find where `range` is led and connect there.
 * 0 (*out is the leader's connection, or this one), else *out is closed. */
static int
follow_located(struct vt_client_dial *d, const struct vt_client_config *base, uint8_t role,
               const struct vt_range_ident *range, struct vt_client **out,
               struct vt_range_location *loc, char *err, size_t err_len)
{
    int rc = vt_client_locate_range(*out, range, loc);
    if (rc != 0) {
        snprintf(err, err_len, "%s", vt_client_last_error(*out));
        vt_client_close(*out);
        *out = NULL;
        return rc;
    }
    char here[300];
    snprintf(here, sizeof(here), "%s:%u", d->cfg.addr.host, d->cfg.addr.port);
    if (!loc->has_leader || loc->leader_addr[0] == '\0' || strcmp(here, loc->leader_addr) == 0)
        return 0;
    vt_client_close(*out);
    *out = NULL;
    char name[37];
    vt_uuid_format(loc->leader, name);
    return vt_client_dial_addr(d, base, loc->leader_addr, name, role, out, err, err_len);
}

int
vt_client_dial_leader(struct vt_client_dial *d, const struct vt_client_config *base, uint8_t role,
                      const struct vt_range_ident *range, uint64_t deadline_ms,
                      struct vt_client **out, struct vt_range_location *loc, char *err,
                      size_t err_len)
{
    uint32_t n_cand = 1 + base->n_nodes, i = 0;
    uint64_t backoff = 50;
    *out = NULL;
    for (;;) {
        d->cfg = *base;
        if (i % n_cand > 0) {
            d->cfg.addr = base->nodes[i % n_cand - 1].addr;
            d->cfg.server_name = base->nodes[i % n_cand - 1].server_name;
        }
        i++;
        if (vt_client_connect(&d->cfg, role, out, err, err_len) == 0 &&
            follow_located(d, base, role, range, out, loc, err, err_len) == 0)
            return 0;
        vt_client_close(*out);
        *out = NULL;
        if (vt_clock_mono_ms() >= deadline_ms)
            return -ETIMEDOUT;
        if (i % n_cand == 0) {
            vt_client_sleep_ms(backoff, NULL);
            backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
        }
    }
}
