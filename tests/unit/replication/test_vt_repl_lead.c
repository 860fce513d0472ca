/* Unit tests for replication/vt_repl_lead.c: the establish arithmetic of a
 * verified promotion (the SPEC's worked examples, absent probes, replica sets
 * of 1, 2, 5 and 7) and the role / lease-view transitions: promote, suspend
 * and re-activate at the same epoch, renewal, a released or demoted epoch
 * that never re-activates, the watcher's monotonic view, a leader demoted by
 * a rival epoch, and every sender refusal a follower gives. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "vt_crc32c.h"
#include "vt_log_types.h"
#include "vt_repl.h"

#define P(o) {.present = true, .offset = (o)}
#define ABSENT {.present = false, .offset = 0}

static const uint8_t SELF[16] = {1};
static const uint8_t OTHER[16] = {2};
static const uint8_t THIRD[16] = {3};

static struct vt_repl_establish
est3(struct vt_repl_probe l, struct vt_repl_probe a, struct vt_repl_probe b)
{
    struct vt_repl_probe f[2] = {a, b};
    return vt_repl_establish(l, f, 2, 3);
}

/* ---- establish -------------------------------------------------------------- */

static void
test_vt_repl_establish_spec_examples(void **state)
{
    (void)state;
    struct vt_repl_establish e = est3((struct vt_repl_probe)P(100), (struct vt_repl_probe)P(90),
                                      (struct vt_repl_probe)P(50));
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 90);
    assert_int_equal(e.answered, 3);
    e = est3((struct vt_repl_probe)P(1000), (struct vt_repl_probe)P(10),
             (struct vt_repl_probe)P(10));
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 10);
    e = est3((struct vt_repl_probe)P(100), (struct vt_repl_probe)P(100),
             (struct vt_repl_probe)P(0));
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 100);
    e = est3((struct vt_repl_probe)P(50), (struct vt_repl_probe)P(90),
             (struct vt_repl_probe)P(90));
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND);
    assert_int_equal(e.boundary, 90);
    e = est3((struct vt_repl_probe)P(90), (struct vt_repl_probe)P(90),
             (struct vt_repl_probe)P(100));
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 90);
}

static void
test_vt_repl_establish_absent_is_not_zero(void **state)
{
    (void)state;
    /* one follower absent: the boundary is over the two answers */
    struct vt_repl_establish e = est3((struct vt_repl_probe)P(100), (struct vt_repl_probe)P(70),
                                      (struct vt_repl_probe)ABSENT);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 70);
    assert_int_equal(e.required, 100);
    assert_int_equal(e.answered, 2);
    /* ... but the leader must hold what the one answering follower holds:
     * records acknowledged by it and the absent one would be lost */
    e = est3((struct vt_repl_probe)P(70), (struct vt_repl_probe)P(100),
             (struct vt_repl_probe)ABSENT);
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND);
    assert_int_equal(e.boundary, 70);
    assert_int_equal(e.required, 100);
    /* both absent: no quorum, whatever the leader holds */
    e = est3((struct vt_repl_probe)P(100), (struct vt_repl_probe)ABSENT,
             (struct vt_repl_probe)ABSENT);
    assert_int_equal(e.kind, VT_REPL_QUORUM_UNAVAILABLE);
    assert_int_equal(e.answered, 1);
    /* the leader absent: answers count, but it is behind */
    e = est3((struct vt_repl_probe)ABSENT, (struct vt_repl_probe)P(5),
             (struct vt_repl_probe)P(5));
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND);
    assert_int_equal(e.answered, 2);
    /* an answer of 0 is present */
    e = est3((struct vt_repl_probe)P(0), (struct vt_repl_probe)P(0), (struct vt_repl_probe)ABSENT);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 0);
}

static void
test_vt_repl_establish_newer_epoch_is_behind(void **state)
{
    (void)state;
    /* a follower holds records of an epoch the leader never wrote: behind,
     * even with the larger offset */
    struct vt_repl_probe newer = {.present = true, .offset = 40, .newer = true};
    struct vt_repl_establish e = est3((struct vt_repl_probe)P(90), newer,
                                      (struct vt_repl_probe)P(90));
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND);
    assert_true(e.newer);
    assert_int_equal(e.boundary, 90);
    /* an absent follower's flag does not count */
    newer.present = false;
    e = est3((struct vt_repl_probe)P(90), newer, (struct vt_repl_probe)P(90));
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_false(e.newer);
}

static void
test_vt_repl_probe_qualify_by_epoch_history(void **state)
{
    (void)state;
    const struct vt_epoch_entry e1[] = {{1, 0}};
    /* further along the same epoch: all of it counts (the leader lacks it) */
    struct vt_repl_probe p = vt_repl_probe_qualify(e1, 1, 50, e1, 1, 90, 90);
    assert_true(p.present);
    assert_false(p.newer);
    assert_int_equal(p.offset, 90);
    /* records of epoch 1 past where this log moved to epoch 3: superseded */
    const struct vt_epoch_entry e13[] = {{1, 0}, {3, 60}};
    p = vt_repl_probe_qualify(e13, 2, 80, e1, 1, 100, 100);
    assert_false(p.newer);
    assert_int_equal(p.offset, 60);
    p = vt_repl_probe_qualify(e13, 2, 80, e1, 1, 100, 40); /* durable below the cut */
    assert_int_equal(p.offset, 40);
    /* a newer epoch than any this log wrote: behind, whatever the offsets */
    const struct vt_epoch_entry e12[] = {{1, 0}, {2, 50}};
    const struct vt_epoch_entry f13[] = {{1, 0}, {3, 40}};
    p = vt_repl_probe_qualify(e12, 2, 60, f13, 2, 45, 45);
    assert_true(p.newer);
    /* an epoch this log raised but never wrote does not count as written */
    const struct vt_epoch_entry e14[] = {{1, 0}, {4, 50}};
    const struct vt_epoch_entry f13b[] = {{1, 0}, {3, 50}};
    p = vt_repl_probe_qualify(e14, 2, 50, f13b, 2, 60, 60);
    assert_true(p.newer);
    p = vt_repl_probe_qualify(e14, 2, 50, e1, 1, 70, 70);
    assert_false(p.newer); /* the same epoch 1, further along */
    assert_int_equal(p.offset, 70);
    /* divergent older epoch: counted up to the first disagreement */
    const struct vt_epoch_entry f12[] = {{1, 0}, {2, 20}};
    p = vt_repl_probe_qualify(e13, 2, 80, f12, 2, 70, 65);
    assert_false(p.newer);
    assert_int_equal(p.offset, 20);
    /* an empty follower proves nothing above 0 and is not newer */
    p = vt_repl_probe_qualify(e13, 2, 80, NULL, 0, 0, 0);
    assert_false(p.newer);
    assert_int_equal(p.offset, 0);
    /* the answer as given is kept for ranking catch-up sources */
    p = vt_repl_probe_qualify(e13, 2, 80, f12, 2, 70, 65);
    assert_int_equal(p.durable, 65);
    assert_int_equal(p.last_epoch, 2);
    p = vt_repl_probe_qualify(e12, 2, 60, f13b, 2, 50, 50); /* epoch 3 wrote nothing */
    assert_int_equal(p.last_epoch, 1);
}

/* The most up-to-date answer that is ahead of the leader: newest written
 * epoch first, then the durable offset; none ahead, none absent counted. */
static void
test_vt_repl_catchup_source_ranks_logs(void **state)
{
    (void)state;
    const struct vt_epoch_entry h[] = {{1, 0}, {3, 40}, {5, 40}, {6, 70}};
    assert_int_equal(vt_repl_last_written_epoch(h, 4, 90), 6);
    assert_int_equal(vt_repl_last_written_epoch(h, 4, 70), 5); /* 6 starts at the end */
    assert_int_equal(vt_repl_last_written_epoch(h, 1, 0), 0);
    assert_int_equal(vt_repl_last_written_epoch(NULL, 0, 0), 0);
    struct vt_repl_probe f[4] = {
        {.present = true, .last_epoch = 5, .durable = 200},
        {.present = true, .last_epoch = 7, .durable = 90},
        {.present = false, .last_epoch = 9, .durable = 500}, /* absent: never a source */
        {.present = true, .last_epoch = 7, .durable = 120},
    };
    assert_int_equal(vt_repl_catchup_source(f, 4, 5, 100), 3);
    assert_int_equal(vt_repl_catchup_source(f, 2, 5, 100), 1); /* a newer epoch beats more */
    assert_int_equal(vt_repl_catchup_source(f, 1, 5, 100), 0); /* same epoch, further */
    assert_int_equal(vt_repl_catchup_source(f, 1, 5, 200), 1); /* not ahead: none (n) */
    assert_int_equal(vt_repl_catchup_source(f, 4, 8, 0), 4);   /* the leader is newest */
    assert_int_equal(vt_repl_catchup_source(f, 0, 0, 0), 0);
}

static void
test_vt_repl_establish_rf1_rf2(void **state)
{
    (void)state;
    struct vt_repl_establish e = vt_repl_establish((struct vt_repl_probe)P(42), NULL, 0, 1);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 42);
    struct vt_repl_probe f[1] = {ABSENT};
    e = vt_repl_establish((struct vt_repl_probe)P(42), f, 1, 2);
    assert_int_equal(e.kind, VT_REPL_QUORUM_UNAVAILABLE);
    f[0] = (struct vt_repl_probe)P(40);
    e = vt_repl_establish((struct vt_repl_probe)P(42), f, 1, 2);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 40);
    f[0] = (struct vt_repl_probe)P(50); /* both needed: the 2nd largest is the leader's */
    e = vt_repl_establish((struct vt_repl_probe)P(42), f, 1, 2);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 42);
    e = vt_repl_establish((struct vt_repl_probe)ABSENT, f, 1, 2);
    assert_int_equal(e.kind, VT_REPL_QUORUM_UNAVAILABLE);
}

static void
test_vt_repl_establish_rf5_rf7(void **state)
{
    (void)state;
    struct vt_repl_probe f5[4] = {P(80), P(60), ABSENT, P(10)};
    struct vt_repl_establish e = vt_repl_establish((struct vt_repl_probe)P(70), f5, 4, 5);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED); /* 80,70,60,10: 3rd = 60 */
    assert_int_equal(e.boundary, 60);
    struct vt_repl_probe f5b[4] = {P(80), ABSENT, ABSENT, ABSENT};
    e = vt_repl_establish((struct vt_repl_probe)P(70), f5b, 4, 5);
    assert_int_equal(e.kind, VT_REPL_QUORUM_UNAVAILABLE);
    assert_int_equal(e.answered, 2);
    struct vt_repl_probe f7[6] = {P(9), P(8), P(7), P(6), ABSENT, P(1)};
    e = vt_repl_establish((struct vt_repl_probe)P(5), f7, 6, 7);
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND); /* 9,8,7,6,5,1: 4th = 6 */
    assert_int_equal(e.boundary, 6);
    /* 6 of 7 answered: a record on 4 replicas is on 3 answerers, so the
     * leader must hold the 3rd largest (7) although 6 is the 4th */
    e = vt_repl_establish((struct vt_repl_probe)P(6), f7, 6, 7);
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND);
    assert_int_equal(e.boundary, 6);
    assert_int_equal(e.required, 7);
    e = vt_repl_establish((struct vt_repl_probe)P(7), f7, 6, 7);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 7); /* 9,8,7,7,6,1: 4th = 7 */
    struct vt_repl_probe f7b[6] = {P(9), P(8), ABSENT, ABSENT, ABSENT, P(1)};
    e = vt_repl_establish((struct vt_repl_probe)P(6), f7b, 6, 7);
    assert_int_equal(e.kind, VT_REPL_LEADER_BEHIND); /* 9,8,6,1: j = 4 + 4 - 7 = 1 */
    assert_int_equal(e.boundary, 1);
    assert_int_equal(e.required, 9);
    e = vt_repl_establish((struct vt_repl_probe)P(9), f7b, 6, 7);
    assert_int_equal(e.kind, VT_REPL_ESTABLISHED);
    assert_int_equal(e.boundary, 1);
    assert_string_equal(vt_repl_establish_name(VT_REPL_LEADER_BEHIND), "leader-behind");
}

/* ---- role and view ----------------------------------------------------------- */

static void
promote_ok(struct vt_repl_lead_state *s, uint64_t e, bool established)
{
    enum vt_repl_promote_step step;
    const char *why = NULL;
    assert_int_equal(vt_repl_lead_promote_check(s, e, &step, &why), 0);
    assert_int_equal(step, VT_REPL_PROMOTE_VERIFY);
    vt_repl_lead_promote_begin(s, e);
    assert_int_equal(s->role, VT_REPL_ROLE_PROMOTING);
    vt_repl_lead_held(s, e);
    vt_repl_lead_promote_end(s, established);
}

static void
test_vt_repl_lead_promote_suspend_reactivate_same_epoch(void **state)
{
    (void)state;
    struct vt_repl_lead_state s;
    vt_repl_lead_init(&s, SELF, 3, NULL);
    promote_ok(&s, 4, false); /* QuorumUnavailable: suspended at 4 */
    assert_int_equal(s.role, VT_REPL_ROLE_SUSPENDED);
    assert_int_equal(s.held, 4);
    enum vt_repl_promote_step step;
    const char *why = NULL;
    /* the same epoch verifies again (no renewal shortcut while suspended) */
    assert_int_equal(vt_repl_lead_promote_check(&s, 4, &step, &why), 0);
    assert_int_equal(step, VT_REPL_PROMOTE_VERIFY);
    vt_repl_lead_promote_begin(&s, 4);
    /* a second promotion while one runs is refused */
    assert_int_equal(vt_repl_lead_promote_check(&s, 4, &step, &why), -EINPROGRESS);
    vt_repl_lead_promote_end(&s, true);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
    assert_int_equal(s.view_epoch, 4);
    assert_true(s.view_known);
    assert_memory_equal(s.view_leader, SELF, 16);
    /* a renewal at the verified epoch does not verify again */
    assert_int_equal(vt_repl_lead_promote_check(&s, 4, &step, &why), 0);
    assert_int_equal(step, VT_REPL_PROMOTE_RENEWED);
    /* below the held epoch: refused */
    assert_int_equal(vt_repl_lead_promote_check(&s, 3, &step, &why), -ESTALE);
    assert_non_null(strstr(why, "below the epoch"));
    /* suspension of a verified leader, then re-activation at the same epoch */
    vt_repl_lead_suspend(&s);
    assert_int_equal(s.role, VT_REPL_ROLE_SUSPENDED);
    promote_ok(&s, 4, true);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
}

static void
test_vt_repl_lead_demoted_epoch_never_reactivates(void **state)
{
    (void)state;
    struct vt_repl_lead_state s;
    vt_repl_lead_init(&s, SELF, 0, NULL);
    promote_ok(&s, 5, true);
    vt_repl_lead_demote(&s, 5, NULL); /* lease lost, rival unknown */
    assert_int_equal(s.role, VT_REPL_ROLE_FOLLOWER);
    assert_false(s.view_known);
    enum vt_repl_promote_step step;
    const char *why = NULL;
    assert_int_equal(vt_repl_lead_promote_check(&s, 5, &step, &why), -ESTALE);
    assert_non_null(strstr(why, "released"));
    /* a new grant at a higher epoch does lead */
    promote_ok(&s, 6, true);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
    /* stepped down: released too */
    vt_repl_lead_step_down(&s);
    assert_int_equal(s.role, VT_REPL_ROLE_FOLLOWER);
    assert_int_equal(vt_repl_lead_promote_check(&s, 6, &step, &why), -ESTALE);
    /* demoted while promoting: the epoch being verified is released too */
    vt_repl_lead_promote_begin(&s, 7);
    vt_repl_lead_demote(&s, 8, OTHER);
    assert_int_equal(s.released_through, 7);
    assert_int_equal(vt_repl_lead_promote_check(&s, 7, &step, &why), -ESTALE);
    /* the view names the rival at 8: promoting at 8 ourselves is refused */
    assert_int_equal(vt_repl_lead_promote_check(&s, 8, &step, &why), -ESTALE);
    assert_non_null(strstr(why, "another leader"));
    assert_int_equal(vt_repl_lead_promote_check(&s, 9, &step, &why), 0);
}

static void
test_vt_repl_lead_watch_monotonic_and_demotes_leader(void **state)
{
    (void)state;
    struct vt_repl_lead_state s;
    vt_repl_lead_init(&s, SELF, 2, NULL);
    assert_int_equal(vt_repl_lead_watch(&s, 4, OTHER), VT_REPL_WATCH_SET);
    assert_int_equal(s.view_epoch, 4);
    assert_int_equal(vt_repl_lead_watch(&s, 3, THIRD), VT_REPL_WATCH_IGNORED);
    assert_memory_equal(s.view_leader, OTHER, 16);
    assert_int_equal(vt_repl_lead_watch(&s, 4, NULL), VT_REPL_WATCH_SET); /* lease lapsed */
    assert_false(s.view_known);
    /* a leader sees a rival at a higher epoch: demote */
    promote_ok(&s, 5, true);
    assert_int_equal(vt_repl_lead_watch(&s, 5, SELF), VT_REPL_WATCH_SET);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
    assert_int_equal(vt_repl_lead_watch(&s, 6, OTHER), VT_REPL_WATCH_DEMOTE);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER); /* the caller demotes */
    vt_repl_lead_demote(&s, 6, OTHER);
    assert_int_equal(s.role, VT_REPL_ROLE_FOLLOWER);
    assert_int_equal(s.view_epoch, 6);
    assert_memory_equal(s.view_leader, OTHER, 16);
    /* a higher epoch without a live lease does not demote a leader */
    promote_ok(&s, 7, true);
    assert_int_equal(vt_repl_lead_watch(&s, 8, NULL), VT_REPL_WATCH_SET);
    assert_int_equal(s.role, VT_REPL_ROLE_LEADER);
    assert_string_equal(vt_repl_role_name(VT_REPL_ROLE_SUSPENDED), "suspended");
}

static void
test_vt_repl_lead_check_sender_refusals(void **state)
{
    (void)state;
    struct vt_repl_lead_state s;
    const char *why = NULL;
    vt_repl_lead_init(&s, SELF, 3, NULL);
    /* no view yet: refused; above the view: the host is hinted */
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 3, OTHER, &why),
                     -ESTALE);
    assert_non_null(strstr(why, "no live leader"));
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 4, OTHER, &why),
                     -EXDEV);
    assert_int_equal(vt_repl_lead_watch(&s, 5, OTHER), VT_REPL_WATCH_SET);
    /* the view's leader at the view's epoch: fence accepted, append not yet */
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 5, OTHER, &why), 0);
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_APPEND, 5, OTHER, &why),
                     -ESTALE);
    assert_non_null(strstr(why, "not fenced"));
    vt_repl_lead_held(&s, 5);
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_APPEND, 5, OTHER, &why), 0);
    /* a stale leader, another sender, an epoch above the view */
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 4, OTHER, &why),
                     -ESTALE);
    assert_non_null(strstr(why, "deposed"));
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_APPEND, 5, THIRD, &why),
                     -ESTALE);
    assert_non_null(strstr(why, "not the leader"));
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 6, OTHER, &why),
                     -EXDEV);
    /* a replica that leads refuses to follow */
    promote_ok(&s, 6, true);
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_APPEND, 6, OTHER, &why),
                     -EPERM);
}

static void
test_vt_repl_lead_static_view_trusts_configured_leader(void **state)
{
    (void)state;
    struct vt_repl_lead_state s;
    const char *why = NULL;
    vt_repl_lead_init(&s, SELF, 2, OTHER);
    /* any epoch from the configured leader (the fence plan judges it) */
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 9, OTHER, &why), 0);
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_APPEND, 9, THIRD, &why),
                     -ESTALE);
    assert_non_null(strstr(why, "configured leader"));
    vt_repl_lead_held(&s, 9);
    assert_int_equal(s.view_epoch, 9);
    /* the lease watcher takes over: the static trust ends */
    assert_int_equal(vt_repl_lead_watch(&s, 10, THIRD), VT_REPL_WATCH_SET);
    assert_false(s.view_static);
    assert_int_equal(vt_repl_lead_check_sender(&s, VT_REPL_SENDER_FENCE, 10, OTHER, &why),
                     -ESTALE);
}

/* ---- the owner core -------------------------------------------------------------- */

static void
test_vt_range_ident_core_is_the_range_id_hash(void **state)
{
    (void)state;
    struct vt_range_ident a = {.topic = "orders", .topic_epoch = 1};
    memset(a.range_id, 0x42, 16);
    struct vt_range_ident b = a;
    snprintf(b.topic, sizeof(b.topic), "other"); /* only the range id places it */
    b.range_generation = 9;
    for (unsigned cores = 1; cores <= 64; cores++) {
        unsigned c = vt_range_ident_core(&a, cores);
        assert_true(c < cores);
        assert_int_equal(c, vt_range_ident_core(&b, cores));
        assert_int_equal(c, vt_crc32c(0, a.range_id, 16) % cores);
    }
    assert_int_equal(vt_range_ident_core(&a, 1), 0);
    /* different ids spread over the cores */
    unsigned seen = 0;
    for (unsigned i = 0; i < 64; i++) {
        a.range_id[0] = (uint8_t)i;
        seen |= 1u << vt_range_ident_core(&a, 4);
    }
    assert_int_equal(seen, 0xf);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_repl_establish_spec_examples),
        cmocka_unit_test(test_vt_repl_establish_absent_is_not_zero),
        cmocka_unit_test(test_vt_repl_establish_newer_epoch_is_behind),
        cmocka_unit_test(test_vt_repl_probe_qualify_by_epoch_history),
        cmocka_unit_test(test_vt_repl_catchup_source_ranks_logs),
        cmocka_unit_test(test_vt_repl_establish_rf1_rf2),
        cmocka_unit_test(test_vt_repl_establish_rf5_rf7),
        cmocka_unit_test(test_vt_repl_lead_promote_suspend_reactivate_same_epoch),
        cmocka_unit_test(test_vt_repl_lead_demoted_epoch_never_reactivates),
        cmocka_unit_test(test_vt_repl_lead_watch_monotonic_and_demotes_leader),
        cmocka_unit_test(test_vt_repl_lead_check_sender_refusals),
        cmocka_unit_test(test_vt_repl_lead_static_view_trusts_configured_leader),
        cmocka_unit_test(test_vt_range_ident_core_is_the_range_id_hash),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
