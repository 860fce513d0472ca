/* Unit tests for ctl/ctl_input: the records `vtopctl produce` reads from
 * arguments or lines. Keys (fixed, split at a separator), a last line
 * without a newline, empty lines; batches that validate and iterate back
 * with base sequence and producer fields; a batch fixed at its first encode
 * (a resend is the same batch even when more records arrived); batches end
 * where the buffer does and a record that alone does not fit is refused;
 * the held-record bound and release; and every bad input (no separator, a
 * record over the limit, a line over the limit, a missing file) ends the
 * input with a message naming the source and line, keeping what came
 * before. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_input.h"
#include "vt_batch.h"

static const uint8_t pid[16] = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x41, 0x11,
                                0x81, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};

static struct ctl_input_opts
opts(uint32_t max_record, uint32_t max_records)
{
    return (struct ctl_input_opts){.max_record_bytes = max_record, .max_records = max_records,
                                   .max_bytes = 1u << 20};
}

/* Writes `text` to a temporary file; returns its path (static buffer). */
static const char *
temp_file(const char *text)
{
    static char path[64];
    snprintf(path, sizeof(path), "/tmp/vt-ctl-input-XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    size_t len = strlen(text);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

/* Encodes the batch at `seq` and checks it; returns its record count. */
static uint32_t
encode_check(struct ctl_input *in, uint64_t seq, uint32_t max_n, const char *const *keys,
             const char *const *values)
{
    uint8_t buf[4096];
    uint32_t n = 0;
    long len = ctl_input_encode(in, seq, max_n, buf, sizeof(buf), pid, 77, &n);
    assert_true(len > 0);
    struct vt_batch_hdr h;
    const char *why = NULL;
    assert_int_equal(vt_batch_validate(buf, (size_t)len, 1u << 20, 1u << 20, &h, &why), 0);
    assert_int_equal(h.record_count, n);
    assert_int_equal(h.base_sequence, seq);
    assert_int_equal(h.producer_epoch, 77);
    assert_memory_equal(h.producer_id, pid, 16);
    struct vt_batch_iter it;
    struct vt_record rec;
    vt_batch_iter_init(&it, buf);
    for (uint32_t i = 0; i < n; i++) {
        assert_int_equal(vt_batch_iter_next(&it, &rec), 1);
        assert_int_equal(rec.key_len, strlen(keys[i]));
        assert_memory_equal(rec.key, keys[i], rec.key_len);
        assert_int_equal(rec.value_len, strlen(values[i]));
        assert_memory_equal(rec.value, values[i], rec.value_len);
    }
    return n;
}

static void
test_ctl_input_args_fixed_key(void **state)
{
    (void)state;
    struct ctl_input in;
    struct ctl_input_opts o = opts(100, 16);
    o.key = "k";
    char *args[] = {"a", "", "ccc"};
    assert_int_equal(ctl_input_init_args(&in, &o, args, 3), 0);
    assert_int_equal(ctl_input_fill(&in, true), 3);
    assert_true(in.done);
    assert_int_equal(in.failed, 0);
    assert_int_equal(ctl_input_end(&in), 3);
    static const char *const keys[] = {"k", "k", "k"};
    static const char *const values[] = {"a", "", "ccc"};
    assert_int_equal(encode_check(&in, 0, 8, keys, values), 3);
    assert_int_equal(ctl_input_fill(&in, true), 0); /* done: nothing more */
    ctl_input_free(&in);
}

static void
test_ctl_input_lines_split_and_last_line(void **state)
{
    (void)state;
    struct ctl_input in;
    struct ctl_input_opts o = opts(100, 16);
    o.key_sep = "::";
    const char *path = temp_file("a::1\nb::2::x\n::empty key\nlast::");
    assert_int_equal(ctl_input_init_file(&in, &o, path), 0);
    int got = 0;
    while (!in.done)
        got += ctl_input_fill(&in, true);
    assert_int_equal(got, 4);
    assert_int_equal(in.failed, 0);
    static const char *const keys[] = {"a", "b", "", "last"};
    static const char *const values[] = {"1", "2::x", "empty key", ""};
    assert_int_equal(encode_check(&in, 0, 8, keys, values), 4);
    ctl_input_free(&in);
    unlink(path);
}

/* The batch of a sequence is fixed by its first encode. */
static void
test_ctl_input_batches_fixed_for_resend(void **state)
{
    (void)state;
    struct ctl_input in;
    struct ctl_input_opts o = opts(100, 16);
    char *args[] = {"r0", "r1", "r2", "r3", "r4"};
    assert_int_equal(ctl_input_init_args(&in, &o, args, 5), 0);
    assert_int_equal(ctl_input_fill(&in, true), 5);
    static const char *const none[] = {"", "", "", "", ""};
    static const char *const v0[] = {"r0", "r1"};
    static const char *const v2[] = {"r2", "r3", "r4"};
    assert_int_equal(encode_check(&in, 0, 2, none, v0), 2);
    assert_int_equal(encode_check(&in, 0, 5, none, v0), 2); /* the resend: the same 2 */
    assert_int_equal(encode_check(&in, 2, 5, none, v2), 3);
    uint8_t buf[256];
    uint32_t n;
    assert_int_equal(ctl_input_encode(&in, 1, 5, buf, sizeof(buf), pid, 1, &n), -EINVAL);
    assert_int_equal(ctl_input_encode(&in, 5, 5, buf, sizeof(buf), pid, 1, &n), -EINVAL);
    ctl_input_release(&in, 2);
    assert_int_equal(in.base_seq, 2);
    assert_int_equal(ctl_input_encode(&in, 0, 5, buf, sizeof(buf), pid, 1, &n), -EINVAL);
    ctl_input_release(&in, 5);
    assert_int_equal(in.q_len, 0);
    assert_int_equal(in.held_bytes, 0);
    ctl_input_free(&in);
}

/* A new batch ends where the buffer does; a record that alone does not fit
 * is refused with its number. */
static void
test_ctl_input_batch_ends_at_cap(void **state)
{
    (void)state;
    struct ctl_input in;
    struct ctl_input_opts o = opts(1000, 16);
    char v[201];
    memset(v, 'v', 200);
    v[200] = '\0';
    char *args[] = {v, v, v};
    assert_int_equal(ctl_input_init_args(&in, &o, args, 3), 0);
    assert_int_equal(ctl_input_fill(&in, true), 3);
    uint8_t buf[600];
    uint32_t n = 0;
    /* 84 + 2 x 212 = 508 fits, a third would not */
    assert_int_equal(ctl_input_encode(&in, 0, 8, buf, sizeof(buf), pid, 1, &n), 508);
    assert_int_equal(n, 2);
    assert_int_equal(ctl_input_encode(&in, 2, 8, buf, 200, pid, 1, &n), -EMSGSIZE);
    assert_non_null(strstr(in.why, "record 3 of the command line needs a 296-byte batch"));
    ctl_input_free(&in);
}

/* At most max_records are held; a release makes room. */
static void
test_ctl_input_bound_and_release(void **state)
{
    (void)state;
    struct ctl_input in;
    struct ctl_input_opts o = opts(100, 2);
    const char *path = temp_file("1\n2\n3\n4\n5\n");
    assert_int_equal(ctl_input_init_file(&in, &o, path), 0);
    assert_int_equal(ctl_input_fill(&in, true), 2);
    assert_false(in.done);
    assert_int_equal(ctl_input_fill(&in, true), 0); /* full */
    ctl_input_release(&in, 2);
    assert_int_equal(ctl_input_fill(&in, true), 2);
    assert_int_equal(ctl_input_end(&in), 4);
    ctl_input_release(&in, 4);
    assert_int_equal(ctl_input_fill(&in, true), 1);
    assert_int_equal(ctl_input_fill(&in, true), 0);
    assert_true(in.done);
    assert_int_equal(in.failed, 0);
    ctl_input_free(&in);
    unlink(path);
}

/* Bad input ends the input there, names it, keeps what came before. */
static void
test_ctl_input_bad_input(void **state)
{
    (void)state;
    struct ctl_input in;
    struct ctl_input_opts o = opts(8, 16);
    o.key_sep = "=";
    const char *path = temp_file("a=1\nb=2\nnone\nc=3\n");
    assert_int_equal(ctl_input_init_file(&in, &o, path), 0);
    assert_int_equal(ctl_input_fill(&in, true), 2);
    assert_true(in.done);
    assert_int_equal(in.failed, -EBADMSG);
    assert_non_null(strstr(in.why, ", record 3: no key separator \"=\""));
    assert_int_equal(ctl_input_end(&in), 2);
    ctl_input_free(&in);
    unlink(path);

    o.key_sep = NULL; /* a record over max_record_bytes */
    char *args[] = {"ok", "123456789"};
    assert_int_equal(ctl_input_init_args(&in, &o, args, 2), 0);
    assert_int_equal(ctl_input_fill(&in, true), 1);
    assert_int_equal(in.failed, -EMSGSIZE);
    assert_non_null(strstr(in.why, "the command line, record 2: 9 bytes of key and value exceed "
                           "the 8-byte record limit"));
    ctl_input_free(&in);

    /* a line beyond what the read buffer holds: 8 + 1 + 64 KiB */
    size_t big = (64u << 10) + 100;
    char *text = malloc(big + 8);
    assert_non_null(text);
    memcpy(text, "x\n", 2);
    memset(text + 2, 'y', big);
    text[big + 2] = '\0';
    path = temp_file(text);
    free(text);
    assert_int_equal(ctl_input_init_file(&in, &o, path), 0);
    int got = 0;
    while (!in.done)
        got += ctl_input_fill(&in, true);
    assert_int_equal(got, 1);
    assert_int_equal(in.failed, -EMSGSIZE);
    assert_non_null(strstr(in.why, ", line 2: longer than the 8-byte record limit"));
    ctl_input_free(&in);
    unlink(path);

    assert_int_equal(ctl_input_init_file(&in, &o, "/nonexistent/vt-input"), -ENOENT);
    assert_string_equal(in.why, "/nonexistent/vt-input: No such file or directory");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctl_input_args_fixed_key),
        cmocka_unit_test(test_ctl_input_lines_split_and_last_line),
        cmocka_unit_test(test_ctl_input_batches_fixed_for_resend),
        cmocka_unit_test(test_ctl_input_batch_ends_at_cap),
        cmocka_unit_test(test_ctl_input_bound_and_release),
        cmocka_unit_test(test_ctl_input_bad_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
