/* The error class table (replication/vt_repl_errors.c): every row's
 * retryable flag is what the wire says for its code, every code the range
 * log documents (log/vt_rlog.h, log/vt_producers.h) has its own row at each
 * call site, -ENOSPC and -ENOMEM are retryable, an unknown code falls back
 * to a retryable Storage naming the code, and the replica plane gets codes
 * it has. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_producers.h"
#include "vt_proto.h"
#include "vt_proto_err.h"
#include "vt_repl_host.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

static const char *const site_names[VT_REPL_ERR_SITES] = {"append", "durable", "read", "epoch"};

/* What each call site can return, from the range log's own documentation. */
static const int append_codes[] = {-EAGAIN,         -ENOSPC,
                                   -ENOMEM,         -EIO,
                                   -ECANCELED,      -ESTALE,
                                   -EINVAL,         -ERANGE,
                                   -EEXIST,         VT_PRODUCER_FENCED,
                                   VT_SEQ_FIRST,    VT_SEQ_GAP,
                                   VT_SEQ_CONFLICT, VT_SEQ_BELOW_WINDOW};
static const int durable_codes[] = {-ESTALE, -ENOSPC, -EIO, -ECANCELED, -EAGAIN};
static const int read_codes[] = {-EAGAIN, -ENOMEM, -ECANCELED, -ERANGE, -ENOBUFS, -EBADMSG, -EIO};
static const int epoch_codes[] = {-ESTALE,    -EBUSY, -EAGAIN, -ENOSPC, -EIO,
                                  -ECANCELED, -EPERM, -EINVAL, -EBADMSG};

static const struct {
    const int *codes;
    size_t n;
} documented[VT_REPL_ERR_SITES] = {
    [VT_REPL_ERR_APPEND] = {append_codes, sizeof(append_codes) / sizeof(int)},
    [VT_REPL_ERR_DURABLE] = {durable_codes, sizeof(durable_codes) / sizeof(int)},
    [VT_REPL_ERR_READ] = {read_codes, sizeof(read_codes) / sizeof(int)},
    [VT_REPL_ERR_EPOCH] = {epoch_codes, sizeof(epoch_codes) / sizeof(int)},
};

static void
test_vt_repl_err_table_retryable_matches_wire(void **state)
{
    (void)state;
    size_t n;
    const struct vt_repl_err_class *t = vt_repl_err_table(&n);
    unsigned fallbacks[VT_REPL_ERR_SITES] = {0};
    for (size_t i = 0; i < n; i++) {
        const struct vt_repl_err_class *e = &t[i];
        assert_true((unsigned)e->site < VT_REPL_ERR_SITES);
        assert_true(e->rc <= 0);
        if (e->retryable != vt_proto_error_retryable(e->code))
            fail_msg("%s rc %d: retryable %d, but the wire says %d for %s", site_names[e->site],
                     e->rc, e->retryable, vt_proto_error_retryable(e->code),
                     vt_proto_error_name(e->code));
        assert_string_not_equal(vt_proto_error_name(e->code), "Unknown");
        assert_true(e->text != NULL && e->text[0] != '\0');
        if (e->rc == 0) {
            fallbacks[e->site]++;
            assert_true(e->retryable); /* unknown codes: the client may retry */
            assert_int_equal(e->code, VT_E_STORAGE);
        }
        for (size_t k = 0; k < i; k++)
            if (t[k].site == e->site && t[k].rc == e->rc)
                fail_msg("%s rc %d has two rows", site_names[e->site], e->rc);
        if (e->rc != 0)
            assert_ptr_equal(vt_repl_err_class(e->site, e->rc), e);
    }
    for (unsigned s = 0; s < VT_REPL_ERR_SITES; s++)
        assert_int_equal(fallbacks[s], 1);
}

static void
test_vt_repl_err_class_every_log_code_listed(void **state)
{
    (void)state;
    for (unsigned s = 0; s < VT_REPL_ERR_SITES; s++)
        for (size_t i = 0; i < documented[s].n; i++) {
            int rc = documented[s].codes[i];
            const struct vt_repl_err_class *e = vt_repl_err_class(s, rc);
            if (e->rc != rc)
                fail_msg("%s: code %d (%s) falls to the fallback row", site_names[s], rc,
                         rc > -1000 ? strerror(-rc) : vt_producers_code_name(rc));
            print_message("%-7s %-16s -> %-19s retryable=%d  %s\n", site_names[s],
                          rc > -1000 ? strerror(-rc) : vt_producers_code_name(rc),
                          vt_proto_error_name(e->code), e->retryable, e->text);
        }
}

static void
test_vt_repl_append_refusal_enospc_enomem_retryable(void **state)
{
    (void)state;
    char msg[240];
    assert_int_equal(vt_repl_append_refusal(-ENOSPC, msg, sizeof(msg)), VT_E_OVERLOADED);
    assert_non_null(strstr(msg, "producer table full"));
    assert_int_equal(vt_repl_append_refusal(-ENOMEM, msg, sizeof(msg)), VT_E_OVERLOADED);
    assert_non_null(strstr(msg, "out of memory"));
    assert_true(vt_proto_error_retryable(VT_E_OVERLOADED));
    /* at the other sites too, where a retry can succeed */
    assert_true(vt_repl_err_class(VT_REPL_ERR_DURABLE, -ENOSPC)->retryable);
    assert_true(vt_repl_err_class(VT_REPL_ERR_READ, -ENOMEM)->retryable);
    assert_true(vt_repl_err_class(VT_REPL_ERR_EPOCH, -ENOSPC)->retryable);
    assert_true(vt_repl_err_class(VT_REPL_ERR_DURABLE, -ENOMEM)->retryable); /* fallback */
}

static void
test_vt_repl_append_refusal_keeps_mapped_codes(void **state)
{
    (void)state;
    static const struct {
        int rc;
        uint16_t code;
    } kept[] = {
        {-EAGAIN, VT_E_OVERLOADED},
        {-EIO, VT_E_STORAGE},
        {-ESTALE, VT_E_FENCED},
        {-EINVAL, VT_E_INVALID_REQUEST},
        {-ECANCELED, VT_E_STORAGE},
        {VT_PRODUCER_FENCED, VT_E_PRODUCER_FENCED},
        {VT_SEQ_FIRST, VT_E_SEQUENCE_FIRST},
        {VT_SEQ_GAP, VT_E_SEQUENCE_GAP},
        {VT_SEQ_CONFLICT, VT_E_SEQUENCE_CONFLICT},
        {VT_SEQ_BELOW_WINDOW, VT_E_SEQUENCE_BELOW_WINDOW},
    };
    char msg[240];
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++)
        assert_int_equal(vt_repl_append_refusal(kept[i].rc, msg, sizeof(msg)), kept[i].code);
    assert_int_equal(vt_repl_append_refusal(VT_SEQ_GAP, msg, sizeof(msg)), VT_E_SEQUENCE_GAP);
    assert_non_null(strstr(msg, "(SEQ_GAP)"));
    /* the range log's other answers */
    assert_int_equal(vt_repl_err_class(VT_REPL_ERR_DURABLE, -ESTALE)->code, VT_E_FENCED);
    assert_int_equal(vt_repl_err_class(VT_REPL_ERR_READ, -ERANGE)->code, VT_E_WRONG_RANGE);
    assert_int_equal(vt_repl_err_class(VT_REPL_ERR_READ, -ENOBUFS)->code, VT_E_INVALID_REQUEST);
    assert_int_equal(vt_repl_err_class(VT_REPL_ERR_READ, -EAGAIN)->code, VT_E_OVERLOADED);
}

static void
test_vt_repl_err_answer_unknown_code_storage_retryable(void **state)
{
    (void)state;
    char msg[240], want[64];
    for (unsigned s = 0; s < VT_REPL_ERR_SITES; s++) {
        const struct vt_repl_err_class *e = vt_repl_err_class(s, -EDQUOT);
        assert_int_equal(e->rc, 0);
        assert_int_equal(vt_repl_err_answer(s, -EDQUOT, NULL, msg, sizeof(msg)), VT_E_STORAGE);
        snprintf(want, sizeof(want), ": %s (%d)", strerror(EDQUOT), -EDQUOT);
        assert_non_null(strstr(msg, want));
    }
    /* an unknown producer code is named as one */
    assert_int_equal(vt_repl_append_refusal(-1999, msg, sizeof(msg)), VT_E_STORAGE);
    assert_non_null(strstr(msg, "UNKNOWN (-1999)"));
}

static void
test_vt_repl_err_answer_context_leads(void **state)
{
    (void)state;
    char msg[240];
    assert_int_equal(vt_repl_err_answer(VT_REPL_ERR_READ, -ERANGE, "fetch at 7", msg, sizeof(msg)),
                     VT_E_WRONG_RANGE);
    assert_string_equal(msg, "fetch at 7: offset is below the range's retained start");
    assert_int_equal(vt_repl_err_answer(VT_REPL_ERR_APPEND, -ESTALE, NULL, msg, sizeof(msg)),
                     VT_E_FENCED);
    assert_string_equal(msg, "range fenced");
    char tiny[8];
    (void)vt_repl_err_answer(VT_REPL_ERR_APPEND, -EIO, "context", tiny, sizeof(tiny));
    assert_int_equal(strlen(tiny), sizeof(tiny) - 1); /* truncated, terminated */
}

static void
test_vt_repl__plane_code_every_row(void **state)
{
    (void)state;
    size_t n;
    const struct vt_repl_err_class *t = vt_repl_err_table(&n);
    for (size_t i = 0; i < n; i++) {
        uint16_t rc = vt_repl__plane_code(t[i].code);
        assert_string_not_equal(vt_repl_error_name(rc), "Unknown");
        /* the leader tells only Fenced apart; retryability survives */
        assert_int_equal(rc == VT_REPL_E_FENCED, t[i].code == VT_E_FENCED);
        assert_int_equal(vt_proto_error_retryable(rc), t[i].retryable);
    }
    assert_int_equal(vt_repl__plane_code(VT_E_SEQUENCE_GAP), VT_REPL_E_INVALID_REQUEST);
    assert_int_equal(vt_repl__plane_code(VT_E_OVERLOADED), VT_REPL_E_OVERLOADED);
    assert_int_equal(vt_repl__plane_code(VT_E_STORAGE), VT_REPL_E_STORAGE);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_repl_err_table_retryable_matches_wire),
        cmocka_unit_test(test_vt_repl_err_class_every_log_code_listed),
        cmocka_unit_test(test_vt_repl_append_refusal_enospc_enomem_retryable),
        cmocka_unit_test(test_vt_repl_append_refusal_keeps_mapped_codes),
        cmocka_unit_test(test_vt_repl_err_answer_unknown_code_storage_retryable),
        cmocka_unit_test(test_vt_repl_err_answer_context_leads),
        cmocka_unit_test(test_vt_repl__plane_code_every_row),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
