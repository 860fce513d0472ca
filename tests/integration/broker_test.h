/* Shared state and helpers of the broker integration test (broker_test.c
 * runs the scenarios and owns main; broker_test_input.c holds the
 * bad-input scenarios). Test-only. */
#ifndef BROKER_TEST_H
#define BROKER_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "broker_harness.h"

#define BT_VALUE_MAX 300u    /* record values in the round-trip data */
#define BT_MAX_RECORD 16384u /* node A's limits.max_record */
#define BT_EPOCH_A 3u        /* node A's fencing epoch for every range */

/* One range of a data model: a single producer (BH_CLIENT_A, producer
 * epoch 1) writes sequences 0, 1, 2, ... in order, so on a range written
 * only this way offset == sequence, which the verifier checks. */
struct bt_range {
    struct vt_range_ident id;
    uint32_t idx;      /* data-model index (part of every record's content) */
    uint64_t epoch;    /* the range's fencing epoch */
    uint64_t next_seq; /* next sequence to send == records committed */
};

/* Node A: hosts the round-trip ranges (0..3, two per core) and a fifth
 * range (BT_EPOCH_RANGE) for producer-epoch cases that break the model. */
#define BT_MODEL_RANGES 4
#define BT_EPOCH_RANGE 4

struct bt_world {
    uint64_t seed;
    char root[256];
    struct bh_node a;
    struct bt_range ra[BT_MODEL_RANGES + 1];
    struct bh_client status; /* an admin session on node A for NodeStatus */
    bool round_trip_done;
};

extern struct bt_world bt;

/* NodeStatus of node A through bt.status (asserts success). */
void bt_snapshot(struct vt_range_status *st, uint32_t *n);
/* Asserts that node A's offsets equal the snapshot `before`. */
void bt_assert_unchanged(const struct vt_range_status *before, uint32_t n, const char *what);

/* Reads one answer and asserts it is an Error for request `id` with
 * `code` (and the matching retryable flag). */
void bt_expect_error(struct bh_client *c, uint64_t id, uint16_t code);
/* Reads and asserts a connection-level Error (request id 0) with `code`,
 * then asserts the server closes the connection. */
void bt_expect_fatal(struct bh_client *c, uint16_t code);

/* Opens a producer / consumer session as BH_CLIENT_A on node A. */
void bt_open(struct bh_client *c, uint8_t role);

/* The next batch of the model for range r (not yet sent): *n records. */
uint8_t *bt_model_batch(const struct bt_range *r, uint32_t *n, uint32_t *len);

/* The bad-input scenarios (broker_test_input.c). */
void test_frame_bad_magic_closes(void **state);
void test_frame_bad_crc_closes(void **state);
void test_frame_oversized_payload_len_closes_before_payload(void **state);
void test_frame_nonzero_flags_reserved_major_close(void **state);
void test_frame_unknown_kind_is_invalid_request(void **state);
void test_produce_trailing_bytes_invalid_request(void **state);
void test_produce_batch_bad_crc_invalid_request(void **state);
void test_produce_record_over_max_invalid_request(void **state);
void test_produce_too_many_records_invalid_request(void **state);
void test_hello_wrong_cluster_closes(void **state);
void test_hello_principal_not_cert_cn_closes(void **state);
void test_hello_role_not_allowed(void **state);
void test_produce_producer_id_not_principal_unauthorized(void **state);
void test_produce_wrong_range(void **state);
void test_produce_stale_fencing_epoch_fenced(void **state);
void test_request_id_not_increasing_closes(void **state);
void test_first_frame_not_hello_closes(void **state);
void test_silent_client_closed_after_hello_timeout(void **state);
void test_produce_buffered_and_quorum_refused(void **state);
void test_produce_sequence_errors(void **state);

#endif
