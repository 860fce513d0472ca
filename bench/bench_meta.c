/* `vtop-bench meta`: the command line, admin.yaml, the poll loop that keeps
 * C x K RegisterNode proposals in flight against the meta group's leader,
 * and the report (see bench_meta.h; connections in bench_meta_conn.c). */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "bench_json.h"
#include "bench_meta.h"
#include "bench_runtime.h"
#include "vt_clock.h"
#include "vt_codec.h"
#include "vt_config.h"
#include "vt_frame.h"

#define DRAIN_TIMEOUT_NS (10ull * 1000000000ull)
#define HOLD_NS (50ull * 1000000ull)
#define SLOT_BITS 6 /* frame request id = sequence << SLOT_BITS | slot */
#define NODE_ADDR "127.0.0.1:9"
_Static_assert((1u << SLOT_BITS) >= VT_BM_MAX_INFLIGHT, "slot index fits the request id");

/* ---- command line ---------------------------------------------------------- */

static void
meta_usage(FILE *f)
{
    fprintf(f,
            "usage: vtop-bench meta --config ADMIN.yaml [options]\n"
            "Committed metadata proposals/s and commit latency against a running meta\n"
            "group, over the admin RPC (mutual TLS; the admin.yaml of `vtopctl meta`).\n"
            "Each proposal is a RegisterNode: every in-flight slot owns one node UUID and\n"
            "re-registers it with a compare-and-set on its generation, with a fresh\n"
            "request id and issued_at_ms each time. Committed = a ProposeResp (the\n"
            "committed index) with an Ack. NotLeader answers are followed to the leader.\n"
            "  --config FILE      admin.yaml (endpoints, tls; the certificate must be an\n"
            "                     operator's when the group lists meta.operators);\n"
            "                     --admin FILE is a deprecated alias\n"
            "  --connections C    admin connections to the leader (default 64, max %u)\n"
            "  --inflight K       proposals in flight per connection (default 1, max %u)\n"
            "  --seconds S        measured window (default 10)\n"
            "  --warmup W         seconds before the window (default 2; excluded)\n"
            "  --format F          json: print only the final JSON object; text\n"
            "                      (default): progress and the summary; --json = json\n"
            "Latency runs from the first send of a command to its committed answer\n"
            "(resends after NotLeader, Unavailable or a lost connection keep the request\n"
            "id and the start time), for commands first sent inside the window.\n"
            "Exit 0 when proposals committed and no error was\n"
            "counted, 1 otherwise (the figures are still printed), 2 on usage.\n",
            VT_BM_MAX_CONNS, VT_BM_MAX_INFLIGHT);
}

static int
parse_num(const char *opt, const char *v, double lo, double hi, double *out)
{
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    if (errno != 0 || end == v || *end != '\0' || !isfinite(x) || x < lo || x > hi) {
        fprintf(stderr, "vtop-bench meta: %s '%s': expected a number in [%g, %g]\n", opt, v, lo,
                hi);
        return 2;
    }
    *out = x;
    return 0;
}

static int
parse_args(int argc, char **argv, struct vt_bm_run *run)
{
    run->conns = 64;
    run->inflight = 1;
    run->seconds = 10;
    run->warmup_s = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            meta_usage(stdout);
            return 1;
        }
        if (strcmp(a, "--json") == 0) {
            run->json = true;
            continue;
        }
        if (strcmp(a, "--format") == 0) {
            if (vt_bench_format_arg("vtop-bench meta", argc, argv, &i, &run->json) != 0)
                return 2;
            continue;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "vtop-bench meta: %s needs a value (or is unknown)\n", a);
            return 2;
        }
        const char *v = argv[++i];
        double x = 0;
        int rc = 0;
        if (strcmp(a, "--admin") == 0)
            fprintf(stderr, "vtop-bench meta: --admin is deprecated, use --config\n");
        if (strcmp(a, "--config") == 0 || strcmp(a, "--admin") == 0)
            run->config_path = v;
        else if (strcmp(a, "--connections") == 0 &&
                 (rc = parse_num(a, v, 1, VT_BM_MAX_CONNS, &x)) == 0)
            run->conns = (unsigned)x;
        else if (strcmp(a, "--inflight") == 0 &&
                 (rc = parse_num(a, v, 1, VT_BM_MAX_INFLIGHT, &x)) == 0)
            run->inflight = (unsigned)x;
        else if (strcmp(a, "--seconds") == 0)
            rc = parse_num(a, v, 0.1, 3600, &run->seconds);
        else if (strcmp(a, "--warmup") == 0)
            rc = parse_num(a, v, 0, 3600, &run->warmup_s);
        else if (rc == 0) {
            fprintf(stderr, "vtop-bench meta: unknown option '%s'\n", a);
            return 2;
        }
        if (rc != 0)
            return rc;
    }
    if (run->config_path == NULL) {
        fprintf(stderr, "vtop-bench meta: --config ADMIN.yaml is required\n");
        return 2;
    }
    return 0;
}

/* ---- proposals ------------------------------------------------------------- */

static uint64_t
rng_next(struct vt_bm_run *run)
{
    uint64_t z = (run->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A random (version 4) UUID: never nil. */
static void
uuid_fill(struct vt_bm_run *run, uint8_t out[16])
{
    vt_be64_put(out, rng_next(run));
    vt_be64_put(out + 8, rng_next(run));
    out[6] = (uint8_t)((out[6] & 0x0f) | 0x40);
    out[8] = (uint8_t)((out[8] & 0x3f) | 0x80);
}

static void
slot_issue(struct vt_bm_run *run, struct vt_bm_conn *c, unsigned i, uint64_t now)
{
    struct vt_bm_slot *s = &c->slots[i];
    VT_ASSERT(!s->busy);
    struct vt_meta_cmd cmd;
    memset(&cmd, 0, sizeof(cmd));
    cmd.kind = VT_META_CMD_REGISTER_NODE;
    cmd.issued_at_ms = vt_clock_wall_ms();
    /* A retry after Unavailable keeps its request id: if the first try did
     * commit, the state machine answers from its dedup table. */
    if (!s->retry)
        uuid_fill(run, s->request_id);
    memcpy(cmd.request_id, s->request_id, sizeof(cmd.request_id));
    memcpy(cmd.u.reg.node, s->node, sizeof(s->node));
    cmd.u.reg.has_expected = s->registered;
    cmd.u.reg.expected_generation = s->registered ? s->generation : 0;
    cmd.u.reg.addr_len = (uint16_t)strlen(NODE_ADDR);
    memcpy(cmd.u.reg.addr, NODE_ADDR, cmd.u.reg.addr_len);
    uint8_t buf[512];
    struct vt_wr w;
    vt_wr_init(&w, buf, sizeof(buf));
    vt_meta_admin_propose_encode(&w, &cmd);
    VT_ASSERT(vt_wr_ok(&w));
    uint64_t rid = ++c->next_seq << SLOT_BITS | i;
    if (vt_bm_conn_queue(c, VT_META_ADMIN_K_PROPOSE, rid, buf, w.len) != 0)
        return; /* the output buffer is full: try again next turn */
    s->busy = true;
    s->rid = rid;
    if (!s->retry)
        s->start_ns = now;
    s->retry = false;
    c->n_busy++;
    run->n.sent++;
}

static void
lat_push(struct vt_bm_run *run, uint64_t ns)
{
    if (run->n_lat == run->cap_lat) {
        size_t cap = run->cap_lat ? run->cap_lat * 2 : 65536;
        uint64_t *p = realloc(run->lat_ns, cap * sizeof(*p));
        if (p == NULL)
            return; /* counted as committed, not in the percentiles */
        run->lat_ns = p;
        run->cap_lat = cap;
    }
    run->lat_ns[run->n_lat++] = ns;
}

static void
on_propose_resp(struct vt_bm_run *run, struct vt_bm_slot *s, const struct vt_frame *f, uint64_t now)
{
    struct vt_meta_admin_propose_resp pr;
    char err[200];
    if (vt_meta_admin_propose_resp_decode(f->payload, f->payload_len, &pr, err, sizeof(err)) != 0) {
        run->n.bad_answer++;
        vt_bm_note(run, "undecodable ProposeResp: %s", err);
        return;
    }
    if (pr.resp.kind != VT_META_RESP_ACK) {
        run->n.rejected++;
        vt_bm_note(run, "proposal at index %llu rejected: %s: %s", (unsigned long long)pr.index,
                   vt_meta_err_name(pr.resp.error), pr.resp.detail);
        uuid_fill(run, s->node); /* start over with a node nobody registered */
        s->registered = false;
        return;
    }
    s->registered = true;
    s->generation = pr.resp.generation;
    run->n.committed_total++;
    if (s->start_ns >= run->win_start_ns && s->start_ns < run->win_end_ns) {
        run->n.committed_window++;
        lat_push(run, now - s->start_ns);
    }
}

static void
on_error_answer(struct vt_bm_run *run, struct vt_bm_conn *c, struct vt_bm_slot *s,
                const struct vt_frame *f, uint64_t now)
{
    struct vt_meta_admin_err e;
    char err[200];
    if (vt_meta_admin_error_decode(f->payload, f->payload_len, &e, err, sizeof(err)) != 0) {
        run->n.bad_answer++;
        vt_bm_note(run, "undecodable Error answer: %s", err);
        return;
    }
    if (e.code == VT_META_ADMIN_E_NOT_LEADER) {
        run->n.not_leader++;
        s->retry = true;
        if (e.leader_id != 0 && e.leader_admin[0] != '\0') {
            snprintf(run->leader, sizeof(run->leader), "%s", e.leader_admin);
            run->leader_id = e.leader_id;
            c->reconnect = true;
        } else {
            c->hold_until_ns = now + HOLD_NS;
        }
        return;
    }
    if (e.code == VT_META_ADMIN_E_UNAVAILABLE) {
        run->n.unavailable++;
        s->retry = true;
        c->hold_until_ns = now + HOLD_NS;
    } else {
        run->n.error_answer++;
    }
    vt_bm_note(run, "%s: %s", vt_meta_admin_error_name(e.code), e.msg);
}

static void
on_frame(struct vt_bm_run *run, struct vt_bm_conn *c, const struct vt_frame *f, uint64_t now)
{
    unsigned i = (unsigned)(f->request_id & ((1u << SLOT_BITS) - 1));
    struct vt_bm_slot *s = i < run->inflight ? &c->slots[i] : NULL;
    if (s == NULL || !s->busy || s->rid != f->request_id) {
        run->n.bad_answer++;
        vt_bm_note(run, "connection %u: answer for request id %llu, which is not in flight", c->idx,
                   (unsigned long long)f->request_id);
        return;
    }
    s->busy = false;
    c->n_busy--;
    if (f->kind == VT_META_ADMIN_K_PROPOSE_RESP) {
        on_propose_resp(run, s, f, now);
    } else if (f->kind == VT_META_ADMIN_K_ERROR) {
        on_error_answer(run, c, s, f, now);
    } else {
        run->n.bad_answer++;
        vt_bm_note(run, "connection %u: answer kind %u to a Propose", c->idx, f->kind);
    }
}

/* ---- the loop --------------------------------------------------------------- */

static void
conn_lost(struct vt_bm_run *run, struct vt_bm_conn *c, const char *what, uint64_t now)
{
    vt_bm_note(run, "connection %u to %s: %s", c->idx, c->addr, what);
    run->n.conn_failures++;
    run->n.lost += c->n_busy;
    for (unsigned i = 0; i < run->inflight; i++) {
        c->slots[i].retry = c->slots[i].busy; /* it may have committed */
        c->slots[i].busy = false;
    }
    c->n_busy = 0;
    vt_bm_conn_close(c);
    c->hold_until_ns = now + HOLD_NS;
}

/* Reads and handles every complete answer the socket has. */
static void
conn_read(struct vt_bm_run *run, struct vt_bm_conn *c, uint64_t now)
{
    for (;;) {
        if (vt_bm_conn_fill(c) != 0) {
            conn_lost(run, c, "connection lost", now);
            return;
        }
        size_t used = 0;
        bool full = c->in_len == sizeof(c->in);
        for (;;) {
            struct vt_frame f;
            size_t n = 0;
            const char *why = NULL;
            int rc = vt_frame_parse(c->in + used, c->in_len - used, VT_META_ADMIN_FRAME_MAX, &f, &n,
                                    &why);
            if (rc == -EAGAIN)
                break;
            if (rc != 0) {
                run->n.bad_answer++;
                conn_lost(run, c, why, now);
                return;
            }
            used += n;
            on_frame(run, c, &f, now);
        }
        memmove(c->in, c->in + used, c->in_len - used);
        c->in_len -= used;
        if (!full)
            return;
    }
}

/* (Re)connects, fills free slots and flushes one connection. */
static void
conn_turn(struct vt_bm_run *run, struct vt_bm_conn *c, bool sending, uint64_t now)
{
    if (c->tls != NULL && c->reconnect && c->n_busy == 0) {
        vt_bm_conn_close(c); /* redirected: every answer is in, move to the leader */
        run->n.reconnects++;
    }
    if (c->tls == NULL) {
        if (!sending || now < c->hold_until_ns)
            return;
        if (vt_bm_conn_open(run, c) != 0) {
            run->n.conn_failures++;
            c->hold_until_ns = now + 4 * HOLD_NS;
            (void)vt_bm_find_leader(run); /* the leader may have moved */
            return;
        }
    }
    if (sending && !c->reconnect && now >= c->hold_until_ns)
        for (unsigned i = 0; i < run->inflight; i++)
            if (!c->slots[i].busy)
                slot_issue(run, c, i, now);
    if (vt_bm_conn_flush(c) != 0)
        conn_lost(run, c, "write failed", now);
}

static void
run_loop(struct vt_bm_run *run, double *cpu_s)
{
    struct pollfd *pfd = calloc(run->conns, sizeof(*pfd));
    unsigned *who = calloc(run->conns, sizeof(*who));
    VT_ASSERT(pfd != NULL && who != NULL);
    uint64_t t0 = vt_clock_mono_ns();
    run->win_start_ns = t0 + (uint64_t)(run->warmup_s * 1e9);
    run->win_end_ns = run->win_start_ns + (uint64_t)(run->seconds * 1e9);
    double cpu0 = -1, cpu1 = -1;
    for (;;) {
        uint64_t now = vt_clock_mono_ns();
        bool sending = now < run->win_end_ns;
        if (cpu0 < 0 && now >= run->win_start_ns)
            cpu0 = vt_bench_cpu_s(CLOCK_PROCESS_CPUTIME_ID);
        if (!sending && cpu1 < 0)
            cpu1 = vt_bench_cpu_s(CLOCK_PROCESS_CPUTIME_ID);
        unsigned busy = 0, k = 0;
        for (unsigned i = 0; i < run->conns; i++) {
            conn_turn(run, &run->c[i], sending, now);
            busy += run->c[i].n_busy;
            if (run->c[i].tls == NULL)
                continue;
            pfd[k] = (struct pollfd){.fd = vt_tls_client_fd(run->c[i].tls),
                                     .events = (short)(POLLIN | (run->c[i].out_len ? POLLOUT : 0))};
            who[k++] = i;
        }
        if (!sending && busy == 0)
            break;
        if (!sending && now > run->win_end_ns + DRAIN_TIMEOUT_NS) {
            run->n.unanswered += busy;
            vt_bm_note(run, "%u proposals unanswered %.0f s after the window", busy,
                       DRAIN_TIMEOUT_NS / 1e9);
            break;
        }
        if (poll(pfd, k, 5) <= 0)
            continue;
        now = vt_clock_mono_ns();
        for (unsigned j = 0; j < k; j++)
            if (pfd[j].revents != 0 && run->c[who[j]].tls != NULL)
                conn_read(run, &run->c[who[j]], now);
    }
    if (cpu0 < 0)
        cpu0 = cpu1;
    *cpu_s = cpu1 - cpu0;
    free(pfd);
    free(who);
}

/* ---- report ----------------------------------------------------------------- */

static int
u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static double
pct_us(const struct vt_bm_run *run, double p)
{
    if (run->n_lat == 0)
        return NAN;
    return (double)run->lat_ns[(size_t)(p / 100 * (double)(run->n_lat - 1))] / 1e3;
}

static uint64_t
errors_total(const struct vt_bm_counts *n)
{
    return n->unavailable + n->rejected + n->error_answer + n->lost + n->unanswered +
           n->conn_failures + n->bad_answer;
}

static void
report_json(const struct vt_bm_run *run, const struct vt_bench_machine *m, double cpu_s)
{
    struct vt_bj j = {.f = stdout};
    const struct vt_bm_counts *n = &run->n;
    vt_bj_open(&j, NULL);
    vt_bj_str(&j, "bench", "meta");
    vt_bj_str(&j, "build_type", VT_BENCH_BUILD_TYPE);
    vt_bj_open(&j, "machine");
    vt_bj_u64(&j, "nproc", (uint64_t)m->nproc);
    vt_bj_str(&j, "cpu", m->cpu);
    vt_bj_str(&j, "date", m->date);
    vt_bj_str(&j, "loadavg_start", m->loadavg_start);
    vt_bj_str(&j, "loadavg_end", m->loadavg_end);
    vt_bj_close(&j);
    vt_bj_str(&j, "leader", run->leader);
    vt_bj_u64(&j, "leader_id", run->leader_id);
    vt_bj_u64(&j, "connections", run->conns);
    vt_bj_u64(&j, "inflight", run->inflight);
    vt_bj_num(&j, "seconds", run->seconds, 2);
    vt_bj_num(&j, "warmup_s", run->warmup_s, 2);
    vt_bj_u64(&j, "committed_in_window", n->committed_window);
    vt_bj_num(&j, "proposals_per_s", (double)n->committed_window / run->seconds, 1);
    vt_bj_num(&j, "p50_us", pct_us(run, 50), 1);
    vt_bj_num(&j, "p99_us", pct_us(run, 99), 1);
    vt_bj_num(&j, "p999_us", pct_us(run, 99.9), 1);
    vt_bj_num(&j, "max_us", pct_us(run, 100), 1);
    vt_bj_num(&j, "client_cpu_s", cpu_s, 2);
    vt_bj_u64(&j, "sent", n->sent);
    vt_bj_u64(&j, "committed_total", n->committed_total);
    vt_bj_u64(&j, "not_leader_redirects", n->not_leader);
    vt_bj_u64(&j, "reconnects", n->reconnects);
    vt_bj_open(&j, "errors");
    vt_bj_u64(&j, "total", errors_total(n));
    vt_bj_u64(&j, "unavailable", n->unavailable);
    vt_bj_u64(&j, "rejected", n->rejected);
    vt_bj_u64(&j, "error_answers", n->error_answer);
    vt_bj_u64(&j, "lost_in_flight", n->lost);
    vt_bj_u64(&j, "unanswered", n->unanswered);
    vt_bj_u64(&j, "connection_failures", n->conn_failures);
    vt_bj_u64(&j, "bad_answers", n->bad_answer);
    vt_bj_str(&j, "first", run->first_error);
    vt_bj_close(&j);
    vt_bj_close(&j);
    fputc('\n', stdout);
}

static void
report_text(const struct vt_bm_run *run, double cpu_s)
{
    const struct vt_bm_counts *n = &run->n;
    printf("leader %llu at %s; %u connection(s) x %u in flight; %.1f s window\n",
           (unsigned long long)run->leader_id, run->leader, run->conns, run->inflight,
           run->seconds);
    printf("committed proposals: %llu in the window = %.0f/s\n",
           (unsigned long long)n->committed_window, (double)n->committed_window / run->seconds);
    printf("commit latency us: p50 %.0f  p99 %.0f  p99.9 %.0f  max %.0f\n", pct_us(run, 50),
           pct_us(run, 99), pct_us(run, 99.9), pct_us(run, 100));
    printf("client cpu %.2f s over the window; redirects %llu, reconnects %llu\n", cpu_s,
           (unsigned long long)n->not_leader, (unsigned long long)n->reconnects);
    printf("errors: %llu (unavailable %llu, rejected %llu, error answers %llu, lost %llu, "
           "unanswered %llu, connection failures %llu, bad answers %llu)%s%s\n",
           (unsigned long long)errors_total(n), (unsigned long long)n->unavailable,
           (unsigned long long)n->rejected, (unsigned long long)n->error_answer,
           (unsigned long long)n->lost, (unsigned long long)n->unanswered,
           (unsigned long long)n->conn_failures, (unsigned long long)n->bad_answer,
           run->first_error[0] ? "; first: " : "", run->first_error);
}

/* ---- entry point ------------------------------------------------------------- */

static int
bench_meta_run(struct vt_bm_run *run)
{
    struct vt_bench_machine m;
    vt_bench_machine_read(&m);
    if (!run->json && strcmp(VT_BENCH_BUILD_TYPE, "Release") != 0)
        printf("warning: not a Release build; figures are not representative\n");
    if (getrandom(&run->rng, sizeof(run->rng), 0) != (ssize_t)sizeof(run->rng))
        run->rng = vt_clock_mono_ns();
    if (vt_bm_tls_init(run) != 0 || vt_bm_find_leader(run) != 0) {
        fprintf(stderr, "vtop-bench meta: %s\n", run->first_error);
        return 1;
    }
    run->c = calloc(run->conns, sizeof(*run->c));
    if (run->c == NULL) {
        fprintf(stderr, "vtop-bench meta: out of memory\n");
        return 1;
    }
    for (unsigned i = 0; i < run->conns; i++) {
        run->c[i].idx = i;
        for (unsigned k = 0; k < run->inflight; k++)
            uuid_fill(run, run->c[i].slots[k].node);
        if (vt_bm_conn_open(run, &run->c[i]) != 0) {
            fprintf(stderr, "vtop-bench meta: %s\n", run->first_error);
            return 1;
        }
    }
    double cpu_s = 0;
    run_loop(run, &cpu_s);
    for (unsigned i = 0; i < run->conns; i++)
        vt_bm_conn_close(&run->c[i]);
    if (run->n_lat > 0)
        qsort(run->lat_ns, run->n_lat, sizeof(*run->lat_ns), u64_cmp);
    vt_bench_loadavg(m.loadavg_end, sizeof(m.loadavg_end));
    if (run->json)
        report_json(run, &m, cpu_s);
    else
        report_text(run, cpu_s);
    return run->n.committed_window > 0 && errors_total(&run->n) == 0 ? 0 : 1;
}

int
vt_bench_meta_main(int argc, char **argv)
{
    struct vt_bm_run *run = calloc(1, sizeof(*run));
    if (run == NULL)
        return 1;
    int rc = parse_args(argc, argv, run);
    if (rc != 0) {
        free(run);
        return rc == 1 ? 0 : rc;
    }
    struct vt_cfg_error err;
    if (vt_meta_admin_config_load(run->config_path, &run->cfg, &err) != 0) {
        fprintf(stderr, "vtop-bench meta: %s\n", err.msg);
        free(run);
        return 2;
    }
    rc = bench_meta_run(run);
    vt_tls_client_ctx_free(run->tls_ctx);
    free(run->c);
    free(run->lat_ns);
    vt_meta_admin_config_free(&run->cfg);
    free(run);
    return rc;
}
