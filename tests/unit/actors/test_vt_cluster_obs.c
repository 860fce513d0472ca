/* The cluster actor's observability half (actors/vt_cluster_obs.c): the
 * /readyz text for a held but unverified range (every refused input named
 * by -EINVAL with an empty output, truncation by -ENOSPC), and the lease
 * counters' registration (NULL arguments, a full registry, a second
 * registration) and export of what core 0 published. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_cluster_int.h"
#include "vt_metrics.h"

static const uint8_t range_id[16] = {0x3f, 0x2a, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
                                     0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee};

static void
test_reason_suspended(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(vt_cluster_unready_reason("orders", range_id, 4, VT_LEASE_SUSPENDED,
                                               "quorum unavailable", out, sizeof(out)),
                     0);
    assert_string_equal(out, "range orders/3f2a1122: lease held at epoch 4, promotion "
                             "suspended: quorum unavailable");
    assert_int_equal(vt_cluster_unready_reason("orders", range_id, 4, VT_LEASE_SUSPENDED, NULL,
                                               out, sizeof(out)),
                     0);
    assert_non_null(strstr(out, "suspended: no detail"));
}

static void
test_reason_promoting(void **state)
{
    (void)state;
    char out[256];
    assert_int_equal(vt_cluster_unready_reason("t", range_id, 9, VT_LEASE_PROMOTING, "ignored",
                                               out, sizeof(out)),
                     0);
    assert_string_equal(out, "range t/3f2a1122: lease held at epoch 9, promotion running");
}

static void
test_reason_refuses_bad_input(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(vt_cluster_unready_reason("t", range_id, 1, VT_LEASE_PROMOTING, NULL, NULL,
                                               10),
                     -EINVAL);
    strcpy(out, "x");
    assert_int_equal(vt_cluster_unready_reason("t", range_id, 1, VT_LEASE_PROMOTING, NULL, out,
                                               0),
                     -EINVAL);
    assert_string_equal(out, "x"); /* length 0: nothing written */
    assert_int_equal(vt_cluster_unready_reason(NULL, range_id, 1, VT_LEASE_PROMOTING, NULL, out,
                                               sizeof(out)),
                     -EINVAL);
    assert_string_equal(out, "");
    assert_int_equal(vt_cluster_unready_reason("t", NULL, 1, VT_LEASE_PROMOTING, NULL, out,
                                               sizeof(out)),
                     -EINVAL);
    assert_int_equal(vt_cluster_unready_reason("t", range_id, 0, VT_LEASE_PROMOTING, NULL, out,
                                               sizeof(out)),
                     -EINVAL);
    /* a range that leads, or is not held, is no reason to be unready */
    assert_int_equal(vt_cluster_unready_reason("t", range_id, 3, VT_LEASE_LEADING, NULL, out,
                                               sizeof(out)),
                     -EINVAL);
    assert_int_equal(vt_cluster_unready_reason("t", range_id, 3, VT_LEASE_NOT_HELD, NULL, out,
                                               sizeof(out)),
                     -EINVAL);
    assert_string_equal(out, "");
    char small[20];
    assert_int_equal(vt_cluster_unready_reason("orders", range_id, 4, VT_LEASE_SUSPENDED, "x",
                                               small, sizeof(small)),
                     -ENOSPC);
    assert_int_equal(strlen(small), sizeof(small) - 1);
}

static struct vt_cluster *
cluster_with_agent(void)
{
    struct vt_cluster *cl = calloc(1, sizeof(*cl));
    assert_non_null(cl);
    cl->promote_hist = -1;
    struct vt_lease_agent_config ac = {.max_ranges = 4};
    vt_lease_timing_defaults(&ac.timing);
    ac.node[0] = 1;
    char err[128];
    cl->agent = vt_lease_agent_new(&ac, err, sizeof(err));
    assert_non_null(cl->agent);
    return cl;
}

static void
free_cluster(struct vt_cluster *cl)
{
    vt_lease_agent_free(cl->agent);
    free(cl);
}

static void
test_metrics_register_errors(void **state)
{
    (void)state;
    struct vt_cluster *cl = cluster_with_agent();
    struct vt_metrics *m = vt_metrics_new(1, 4); /* no room for the histogram */
    assert_non_null(m);
    assert_int_equal(vt_cluster_register_metrics(NULL, m), -EINVAL);
    assert_int_equal(vt_cluster_register_metrics(cl, NULL), -EINVAL);
    assert_int_equal(vt_cluster_register_metrics(cl, m), -ENOSPC);
    vt_metrics_free(m);
    m = vt_metrics_new(1, 256);
    assert_int_equal(vt_cluster_register_metrics(cl, m), 0);
    assert_true(cl->promote_hist >= 0);
    /* the same series twice */
    assert_int_equal(vt_cluster_register_metrics(cl, m), -EEXIST);
    vt_metrics_free(m);
    free_cluster(cl);
}

static void
test_metrics_export_published_counters(void **state)
{
    (void)state;
    struct vt_cluster *cl = cluster_with_agent();
    struct vt_metrics *m = vt_metrics_new(1, 256);
    assert_int_equal(vt_cluster_register_metrics(cl, m), 0);
    /* a round that asks for nothing: the counters are published as zeros */
    assert_int_equal(vt_lease_agent_round(cl->agent, 1000, 1000, NULL, 0), 0);
    vt_cluster__publish_counters(cl);
    atomic_store(&cl->pub.losses[VT_LEASE_LOSS_EXPIRED], 3); /* as core 0 would publish */
    atomic_store(&cl->pub.promotions[VT_LEASE_PROMOTE_QUORUM_UNAVAILABLE], 2);
    vt_metric_observe(vt_metrics_shard(m, 0), cl->promote_hist, 40);
    static char page[65536];
    assert_true(vt_metrics_render(m, page, sizeof(page)) > 0);
    assert_non_null(strstr(page, "vtop_broker_lease_acquisitions_total 0\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_renewals_total 0\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_renew_commands_total 0\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_acquire_attempts_total 0\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_rpc_errors_total 0\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_refusals_total{reason=\"acquire_lost\"} 0\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_losses_total{reason=\"expired\"} 3\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_losses_total{reason=\"rival\"} 0\n"));
    assert_non_null(
        strstr(page, "vtop_broker_lease_promotions_total{result=\"quorum_unavailable\"} 2\n"));
    assert_non_null(strstr(page, "vtop_broker_lease_promotion_duration_seconds_count 1\n"));
    /* the next copy from the agent replaces what was there */
    vt_cluster__publish_counters(cl);
    assert_int_equal(atomic_load(&cl->pub.losses[VT_LEASE_LOSS_EXPIRED]), 0);
    vt_metrics_free(m);
    free_cluster(cl);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reason_suspended),
        cmocka_unit_test(test_reason_promoting),
        cmocka_unit_test(test_reason_refuses_bad_input),
        cmocka_unit_test(test_metrics_register_errors),
        cmocka_unit_test(test_metrics_export_published_counters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
