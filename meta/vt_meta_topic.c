/* Topics with K ranges placed on replica sets: CreateTopic, the derived
 * range ids, the placement rule, and the paged node/range reads the admin
 * plane serves (rules: docs/METADATA.md "CreateTopic" and "Placement").
 *
 * Placement is a pure function of the state and the command: candidates are
 * the Active nodes in id order, the score of a node is how many live
 * replicas (or preferred leaderships) it already hosts, and ties are broken
 * by a hash of (range id, node id), then by node id. No RNG, no clock, no
 * hash-table order, so every replica places the same way. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_meta_fsm_int.h"

static const uint8_t nil_id[VT_META_UUID_BYTES];

/* ---- derived ids and the tie-break hash --------------------------------- */

/* SplitMix64's finalizer: a bijection on 64 bits with good avalanche. */
static uint64_t
mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void
vt_meta__range_id(const uint8_t root[VT_META_UUID_BYTES], uint32_t index,
                  uint8_t out[VT_META_UUID_BYTES])
{
    if (index == 0) {
        memcpy(out, root, VT_META_UUID_BYTES);
        return;
    }
    uint64_t a = mix64(vt_be64_get(root) ^ mix64(index));
    uint64_t b = mix64(vt_be64_get(root + 8) ^ mix64(a + index));
    vt_be64_put(out, a);
    vt_be64_put(out + 8, b);
    out[6] = (uint8_t)((out[6] & 0x0f) | 0x40); /* version 4 */
    out[8] = (uint8_t)((out[8] & 0x3f) | 0x80); /* RFC 4122 variant */
}

/* FNV-1a over range id || node id, finished by mix64. */
static uint64_t
tie_hash(const uint8_t range[VT_META_UUID_BYTES], const uint8_t node[VT_META_UUID_BYTES])
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (unsigned i = 0; i < VT_META_UUID_BYTES; i++)
        h = (h ^ range[i]) * 0x100000001b3ull;
    for (unsigned i = 0; i < VT_META_UUID_BYTES; i++)
        h = (h ^ node[i]) * 0x100000001b3ull;
    return mix64(h);
}

/* ---- placement ------------------------------------------------------------ */

/* owner: one CreateTopic apply */
struct placer {
    uint32_t n;        /* Active candidates */
    uint32_t *node_ix; /* their positions in the node table, ascending id */
    uint32_t *hosted;  /* live replicas each already hosts */
    uint32_t *led;     /* live ranges each is the preferred leader of */
};

static void
placer_free(struct placer *p)
{
    free(p->node_ix);
    free(p->hosted);
    free(p->led);
    memset(p, 0, sizeof(*p));
}

static const uint8_t *
cand_id(const struct vt_meta_state *st, const struct placer *p, uint32_t c)
{
    return ((const struct vt_meta_node_rec *)vt_meta__at(&st->nodes, p->node_ix[c]))->id;
}

/* The candidate with this id, or UINT32_MAX (not Active). */
static uint32_t
cand_find(const struct vt_meta_state *st, const struct placer *p,
          const uint8_t id[VT_META_UUID_BYTES])
{
    uint32_t lo = 0, hi = p->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = memcmp(cand_id(st, p, mid), id, VT_META_UUID_BYTES);
        if (c == 0)
            return mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return UINT32_MAX;
}

/* Collects the Active nodes and counts what each hosts and leads over all
 * live ranges. 0 or -ENOMEM. */
static int
placer_init(const struct vt_meta_state *st, struct placer *p)
{
    memset(p, 0, sizeof(*p));
    for (uint32_t i = 0; i < st->nodes.n; i++)
        if (((const struct vt_meta_node_rec *)vt_meta__at(&st->nodes, i))->state ==
            VT_META_NODE_ACTIVE)
            p->n++;
    size_t cells = p->n ? p->n : 1;
    p->node_ix = malloc(cells * sizeof(uint32_t));
    p->hosted = calloc(cells, sizeof(uint32_t));
    p->led = calloc(cells, sizeof(uint32_t));
    if (p->node_ix == NULL || p->hosted == NULL || p->led == NULL) {
        placer_free(p);
        return -ENOMEM;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < st->nodes.n; i++)
        if (((const struct vt_meta_node_rec *)vt_meta__at(&st->nodes, i))->state ==
            VT_META_NODE_ACTIVE)
            p->node_ix[k++] = i;
    for (uint32_t i = 0; i < st->ranges.n; i++) {
        const struct vt_meta_range_rec *rg = vt_meta__at(&st->ranges, i);
        if (rg->deleted)
            continue;
        for (unsigned r = 0; r < rg->n_replicas; r++) {
            uint32_t c = cand_find(st, p, rg->replicas[r]);
            if (c == UINT32_MAX)
                continue; /* a Draining or Dead node: not a candidate */
            p->hosted[c]++;
            if (r == 0)
                p->led[c]++;
        }
    }
    return 0;
}

/* a before b: lower score, then lower hash, then lower id. */
static bool
better(const struct vt_meta_state *st, const struct placer *p, const uint8_t range[16],
       const uint32_t *score, uint32_t a, uint32_t b)
{
    if (score[a] != score[b])
        return score[a] < score[b];
    uint64_t ha = tie_hash(range, cand_id(st, p, a)), hb = tie_hash(range, cand_id(st, p, b));
    if (ha != hb)
        return ha < hb;
    return memcmp(cand_id(st, p, a), cand_id(st, p, b), VT_META_UUID_BYTES) < 0;
}

/* Places one range: replicas[0] is the preferred leader, then the rest in
 * choice order; the counts are updated. */
static void
place_range(const struct vt_meta_state *st, struct placer *p, const uint8_t range[16], uint8_t rf,
            struct vt_meta_range_rec *rg)
{
    uint32_t pick[VT_META_RF_MAX] = {0};
    uint32_t np = 0;
    for (uint32_t c = 0; c < p->n; c++) { /* keep the rf best, sorted */
        if (np == rf && !better(st, p, range, p->hosted, c, pick[np - 1]))
            continue;
        uint32_t at = np < rf ? np++ : (uint32_t)rf - 1;
        while (at > 0 && better(st, p, range, p->hosted, c, pick[at - 1])) {
            pick[at] = pick[at - 1];
            at--;
        }
        pick[at] = c;
    }
    VT_ASSERT(np == rf);
    uint32_t lead = 0;
    for (uint32_t i = 1; i < np; i++)
        if (better(st, p, range, p->led, pick[i], pick[lead]))
            lead = i;
    rg->n_replicas = rf;
    memcpy(rg->replicas[0], cand_id(st, p, pick[lead]), VT_META_UUID_BYTES);
    for (uint32_t i = 0, o = 1; i < np; i++)
        if (i != lead)
            memcpy(rg->replicas[o++], cand_id(st, p, pick[i]), VT_META_UUID_BYTES);
    for (uint32_t i = 0; i < np; i++)
        p->hosted[pick[i]]++;
    p->led[pick[lead]]++;
}

/* ---- CreateTopic ------------------------------------------------------------ */

static int
cmp_range_id(const void *a, const void *b)
{
    return memcmp(a, b, VT_META_UUID_BYTES);
}

/* Merges `n` records sorted by id (none present in the table) into the
 * table, whose room was reserved: one pass from the back, O(table + n). */
static void
ranges_merge(struct vt_meta_table *t, const struct vt_meta_range_rec *add, uint32_t n)
{
    VT_ASSERT(t->cap - t->n >= n);
    size_t es = t->elem_size;
    uint32_t i = t->n, j = n, o = t->n + n;
    while (j > 0) {
        const uint8_t *old = i > 0 ? t->items + (size_t)(i - 1) * es : NULL;
        if (old != NULL && memcmp(old, add[j - 1].id, VT_META_UUID_BYTES) > 0) {
            memmove(t->items + (size_t)(o - 1) * es, old, es);
            i--;
        } else {
            memcpy(t->items + (size_t)(o - 1) * es, &add[j - 1], es);
            j--;
        }
        o--;
    }
    t->n += n;
}

/* Malformed checks of the explicit replica list: no nil id, no repeats. */
static bool
explicit_ok(const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    char a[37];
    for (unsigned i = 0; i < c->u.create.n_explicit; i++) {
        if (memcmp(c->u.create.explicit_nodes[i], nil_id, VT_META_UUID_BYTES) == 0) {
            vt_meta__reject(out, VT_META_ERR_MALFORMED, "explicit replica %u is nil", i);
            return false;
        }
        for (unsigned j = 0; j < i; j++)
            if (memcmp(c->u.create.explicit_nodes[i], c->u.create.explicit_nodes[j],
                       VT_META_UUID_BYTES) == 0) {
                vt_meta__reject(out, VT_META_ERR_MALFORMED,
                                "explicit replica %s is named twice (entries %u and %u)",
                                vt_meta__id_text(c->u.create.explicit_nodes[i], a), j, i);
                return false;
            }
    }
    return true;
}

/* Existence and state of the explicit replicas. */
static bool
explicit_exist(const struct vt_meta_state *st, const struct vt_meta_cmd *c,
               struct vt_meta_response *out)
{
    char a[37];
    for (unsigned i = 0; i < c->u.create.n_explicit; i++) {
        const struct vt_meta_node_rec *n =
            vt_meta__table_find_id(&st->nodes, c->u.create.explicit_nodes[i], NULL);
        if (n == NULL) {
            vt_meta__reject(out, VT_META_ERR_NOT_FOUND, "replica node %s is not registered",
                            vt_meta__id_text(c->u.create.explicit_nodes[i], a));
            return false;
        }
    }
    for (unsigned i = 0; i < c->u.create.n_explicit; i++) {
        const struct vt_meta_node_rec *n =
            vt_meta__table_find_id(&st->nodes, c->u.create.explicit_nodes[i], NULL);
        if (n->state != VT_META_NODE_ACTIVE) {
            vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                            "replica node %s is %s, not Active", vt_meta__id_text(n->id, a),
                            vt_meta_node_state_name(n->state));
            return false;
        }
    }
    return true;
}

/* Arguments valid in any state (Malformed otherwise). */
static bool
create_args_ok(const struct vt_meta_cmd *c, struct vt_meta_response *out)
{
    if (memcmp(c->u.create.topic, nil_id, VT_META_UUID_BYTES) == 0 ||
        memcmp(c->u.create.root_range, nil_id, VT_META_UUID_BYTES) == 0) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "topic and root range ids must not be nil");
        return false;
    }
    if (memcmp(c->u.create.topic, c->u.create.root_range, VT_META_UUID_BYTES) == 0) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "root range id equals the topic id");
        return false;
    }
    if (!vt_meta_topic_name_valid(c->u.create.name, c->u.create.name_len)) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED, "topic name must be 1..%u of [A-Za-z0-9._-]",
                        VT_META_TOPIC_NAME_MAX);
        return false;
    }
    if (c->u.create.n_ranges < 1 || c->u.create.n_ranges > VT_META_TOPIC_RANGES_MAX ||
        c->u.create.rf < 1 || c->u.create.rf > VT_META_RF_MAX ||
        (c->u.create.n_explicit != 0 && c->u.create.n_explicit != c->u.create.rf)) {
        vt_meta__reject(out, VT_META_ERR_MALFORMED,
                        "range count %u (1..%u), replication factor %u (1..%u) or explicit "
                        "replica count %u (0 or rf) out of bounds",
                        c->u.create.n_ranges, VT_META_TOPIC_RANGES_MAX, c->u.create.rf,
                        VT_META_RF_MAX, c->u.create.n_explicit);
        return false;
    }
    return explicit_ok(c, out);
}

/* The K new range records (ids derived, sorted by id afterwards), or a
 * rejection when a derived id is taken. 0 (check out->kind), or -ENOMEM. */
static int
create_ranges(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c,
              struct vt_meta_range_rec **recs_out, struct vt_meta_response *out)
{
    char a[37];
    uint32_t k = c->u.create.n_ranges;
    struct vt_meta_range_rec *recs = calloc(k, sizeof(*recs));
    if (recs == NULL)
        return -ENOMEM;
    for (uint32_t i = 0; i < k; i++) {
        struct vt_meta_range_rec *rg = &recs[i];
        vt_meta__range_id(c->u.create.root_range, i, rg->id);
        memcpy(rg->topic, c->u.create.topic, VT_META_UUID_BYTES);
        rg->index = i;
        rg->count = k;
        if (vt_meta__table_find_id(&fsm->st.ranges, rg->id, NULL) != NULL) {
            vt_meta__reject(out, VT_META_ERR_ALREADY_EXISTS,
                            "range id %s (index %u) is already used", vt_meta__id_text(rg->id, a),
                            i);
            free(recs);
            return 0;
        }
    }
    *recs_out = recs;
    return 0;
}

static void
created(struct vt_meta_response *out, const struct vt_meta_cmd *c, uint64_t epoch)
{
    memset(out, 0, sizeof(*out));
    out->kind = VT_META_RESP_TOPIC_CREATED;
    memcpy(out->topic, c->u.create.topic, VT_META_UUID_BYTES);
    memcpy(out->root_range, c->u.create.root_range, VT_META_UUID_BYTES);
    out->epoch = epoch;
}

/* Places every range (explicitly or by the rule) and sorts them by id;
 * a repeated derived id is refused. 0 (check out->kind), or -ENOMEM. */
static int
place_all(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c, struct vt_meta_range_rec *recs,
          struct vt_meta_response *out)
{
    uint32_t k = c->u.create.n_ranges;
    uint8_t rf = c->u.create.rf;
    if (c->u.create.n_explicit > 0) {
        for (uint32_t i = 0; i < k; i++) {
            recs[i].n_replicas = rf;
            memcpy(recs[i].replicas, c->u.create.explicit_nodes, (size_t)rf * VT_META_UUID_BYTES);
        }
    } else {
        struct placer p;
        if (placer_init(&fsm->st, &p) != 0)
            return -ENOMEM;
        if (p.n < rf) {
            vt_meta__reject(out, VT_META_ERR_INVALID_TRANSITION,
                            "replication factor %u needs %u active nodes, %u are active", rf, rf,
                            p.n);
            placer_free(&p);
            return 0;
        }
        for (uint32_t i = 0; i < k; i++)
            place_range(&fsm->st, &p, recs[i].id, rf, &recs[i]);
        placer_free(&p);
    }
    qsort(recs, k, sizeof(*recs), cmp_range_id);
    for (uint32_t i = 1; i < k; i++)
        if (memcmp(recs[i - 1].id, recs[i].id, VT_META_UUID_BYTES) == 0) {
            char a[37];
            vt_meta__reject(out, VT_META_ERR_ALREADY_EXISTS,
                            "range id %s (index %u) is derived twice",
                            vt_meta__id_text(recs[i].id, a), recs[i].index);
            return 0;
        }
    return 0;
}

int
vt_meta__cmd_create_topic(struct vt_meta_fsm *fsm, const struct vt_meta_cmd *c,
                          struct vt_meta_response *out)
{
    char a[37];
    struct vt_meta_state *st = &fsm->st;
    const char *name = c->u.create.name;
    int nlen = c->u.create.name_len;
    uint32_t k = c->u.create.n_ranges;
    if (!create_args_ok(c, out))
        return 0;
    if (vt_meta__table_find_id(&st->topics, c->u.create.topic, NULL) != NULL)
        return vt_meta__reject(out, VT_META_ERR_ALREADY_EXISTS, "topic id %s is already used",
                               vt_meta__id_text(c->u.create.topic, a));
    if (vt_meta__table_find_id(&st->ranges, c->u.create.root_range, NULL) != NULL)
        return vt_meta__reject(out, VT_META_ERR_ALREADY_EXISTS, "range id %s is already used",
                               vt_meta__id_text(c->u.create.root_range, a));
    const struct vt_meta_name_rec *nr = vt_meta__names_find(&st->names, name, (size_t)nlen, NULL);
    if (nr != NULL && nr->live)
        return vt_meta__reject(out, VT_META_ERR_ALREADY_EXISTS,
                               "topic %.*s exists (epoch %" PRIu64 ")", nlen, name, nr->max_epoch);
    if (!explicit_exist(st, c, out))
        return 0;
    if (st->topics.n >= fsm->limits.max_topics)
        return vt_meta__reject(out, VT_META_ERR_LIMIT, "topic limit %u reached",
                               fsm->limits.max_topics);
    if (k > fsm->limits.max_ranges || st->ranges.n > fsm->limits.max_ranges - k)
        return vt_meta__reject(out, VT_META_ERR_LIMIT,
                               "range limit %u: %u ranges exist, %u more do not fit",
                               fsm->limits.max_ranges, st->ranges.n, k);
    struct vt_meta_range_rec *recs = NULL;
    out->kind = 0;
    int rc = create_ranges(fsm, c, &recs, out);
    if (rc != 0 || recs == NULL)
        return rc;
    rc = place_all(fsm, c, recs, out);
    if (rc != 0 || out->kind == VT_META_RESP_REJECTED) {
        free(recs);
        return rc;
    }
    if (vt_meta__table_reserve(&st->topics, 1) != 0 ||
        vt_meta__table_reserve(&st->ranges, k) != 0 ||
        (nr == NULL && vt_meta__table_reserve(&st->names, 1) != 0)) {
        free(recs);
        return -ENOMEM;
    }
    /* No failure past this point. */
    uint64_t epoch = nr != NULL ? nr->max_epoch + 1 : 1;
    ranges_merge(&st->ranges, recs, k);
    free(recs);

    uint32_t tpos = 0, npos = 0;
    struct vt_meta_topic_rec tp;
    memset(&tp, 0, sizeof(tp));
    memcpy(tp.id, c->u.create.topic, VT_META_UUID_BYTES);
    memcpy(tp.root_range, c->u.create.root_range, VT_META_UUID_BYTES);
    tp.epoch = epoch;
    tp.name_len = c->u.create.name_len;
    memcpy(tp.name, name, tp.name_len);
    tp.n_ranges = (uint16_t)k;
    tp.rf = c->u.create.rf;
    const void *dup = vt_meta__table_find_id(&st->topics, tp.id, &tpos);
    VT_ASSERT(dup == NULL);
    vt_meta__table_insert(&st->topics, tpos, &tp);

    struct vt_meta_name_rec *nm = vt_meta__names_find(&st->names, tp.name, tp.name_len, &npos);
    if (nm == NULL) {
        struct vt_meta_name_rec fresh;
        memset(&fresh, 0, sizeof(fresh));
        fresh.name_len = tp.name_len;
        memcpy(fresh.name, tp.name, tp.name_len);
        vt_meta__table_insert(&st->names, npos, &fresh);
        nm = vt_meta__at(&st->names, npos);
    }
    nm->max_epoch = epoch;
    nm->live = true;
    memcpy(nm->live_topic, tp.id, VT_META_UUID_BYTES);
    created(out, c, epoch);
    return 0;
}

/* ---- reads ------------------------------------------------------------------ */

/* Index of the first record with id > after. */
static uint32_t
first_after(const struct vt_meta_table *t, const uint8_t *after)
{
    if (after == NULL || memcmp(after, nil_id, VT_META_UUID_BYTES) == 0)
        return 0;
    uint32_t pos = 0;
    return vt_meta__table_find_id(t, after, &pos) != NULL ? pos + 1 : pos;
}

uint32_t
vt_meta_fsm_nodes_list(const struct vt_meta_fsm *fsm, const uint8_t after[VT_META_UUID_BYTES],
                       struct vt_meta_node_view *out, uint32_t max, bool *more)
{
    const struct vt_meta_table *t = &fsm->st.nodes;
    uint32_t i = first_after(t, after), n = 0;
    for (; i < t->n && n < max; i++, n++) {
        const struct vt_meta_node_rec *r = vt_meta__at(t, i);
        int rc = vt_meta_fsm_node_get(fsm, r->id, &out[n]);
        VT_ASSERT(rc == 0);
    }
    *more = i < t->n;
    return n;
}

static bool
range_matches(const struct vt_meta_range_rec *rg, const struct vt_meta_range_filter *f,
              const uint8_t *topic)
{
    if (rg->deleted)
        return false;
    if (topic != NULL && memcmp(rg->topic, topic, VT_META_UUID_BYTES) != 0)
        return false;
    if (f == NULL || !f->by_node)
        return true;
    for (unsigned r = 0; r < rg->n_replicas; r++)
        if (memcmp(rg->replicas[r], f->node, VT_META_UUID_BYTES) == 0)
            return true;
    return false;
}

static void
range_view(const struct vt_meta_state *st, const struct vt_meta_range_rec *rg,
           struct vt_meta_range_view *v)
{
    memset(v, 0, sizeof(*v));
    const struct vt_meta_topic_rec *tp = vt_meta__table_find_id(&st->topics, rg->topic, NULL);
    VT_ASSERT(tp != NULL);
    memcpy(v->topic, tp->id, VT_META_UUID_BYTES);
    v->topic_name_len = tp->name_len;
    memcpy(v->topic_name, tp->name, tp->name_len);
    v->topic_epoch = tp->epoch;
    memcpy(v->range, rg->id, VT_META_UUID_BYTES);
    v->index = rg->index;
    v->count = rg->count;
    v->generation = rg->generation;
    v->fencing_epoch = rg->fencing_epoch;
    v->n_replicas = rg->n_replicas;
    memcpy(v->replicas, rg->replicas, sizeof(v->replicas));
    v->has_lease = rg->lease.present;
    if (rg->lease.present) {
        memcpy(v->holder, rg->lease.holder, VT_META_UUID_BYTES);
        v->lease_epoch = rg->lease.epoch;
        v->has_deadline = rg->lease.has_deadline;
        v->deadline_ms = rg->lease.deadline_ms;
    }
}

uint32_t
vt_meta_fsm_ranges_list(const struct vt_meta_fsm *fsm, const struct vt_meta_range_filter *filter,
                        const uint8_t after[VT_META_UUID_BYTES], struct vt_meta_range_view *out,
                        uint32_t max, bool *more)
{
    const struct vt_meta_state *st = &fsm->st;
    const uint8_t *topic = NULL;
    *more = false;
    if (filter != NULL && filter->topic != NULL && filter->topic_len > 0) {
        const struct vt_meta_name_rec *nr =
            vt_meta__names_find(&st->names, filter->topic, filter->topic_len, NULL);
        if (nr == NULL || !nr->live)
            return 0;
        topic = nr->live_topic;
    }
    uint32_t n = 0;
    for (uint32_t i = first_after(&st->ranges, after); i < st->ranges.n; i++) {
        const struct vt_meta_range_rec *rg = vt_meta__at(&st->ranges, i);
        if (!range_matches(rg, filter, topic))
            continue;
        if (n == max) {
            *more = true;
            break;
        }
        range_view(st, rg, &out[n++]);
    }
    return n;
}
