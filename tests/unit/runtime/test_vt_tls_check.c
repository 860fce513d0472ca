/* Unit tests for runtime/vt_tls_check.c: a good identity passes; every fault
 * (missing, not a file, not PEM, key mismatch, another CA, expired, not yet
 * valid, bad CN, wrong CN) comes back with its own code, the file it is about
 * and a sentence naming the path. Certificates come from scripts/gen-certs.sh
 * via the CTest fixture (VT_TEST_CERTS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vt_tls_check.h"

#define N1 "00000000-0000-4000-8000-000000000001"
#define N2 "00000000-0000-4000-8000-000000000002"
#define C1 "11111111-1111-4111-8111-111111111111" /* gen-certs' first client CN */

static char certs[512];
static char scratch[] = "/tmp/vtop-tls-check-XXXXXX";

static const char *
path(const char *name)
{
    static char bufs[4][700];
    static unsigned k;
    char *b = bufs[k++ % 4];
    if (name[0] == '@') /* a file of the scratch directory */
        snprintf(b, sizeof(bufs[0]), "%s/%s", scratch, name + 1);
    else
        snprintf(b, sizeof(bufs[0]), "%s/%s", certs, name);
    return b;
}

/* Checks ca/cert/key (names relative to the certificate directory). */
static int
check(const char *ca, const char *cert, const char *key, const char *cn, int64_t now_s,
      struct vt_tls_check *out)
{
    char c[700], t[700], k[700];
    snprintf(c, sizeof(c), "%s", path(ca));
    snprintf(t, sizeof(t), "%s", path(cert));
    snprintf(k, sizeof(k), "%s", path(key));
    struct vt_tls_files f = {.ca_file = c, .cert_file = t, .key_file = k};
    return vt_tls_check_files(&f, cn, now_s, out);
}

static void
expect_fault(const char *ca, const char *cert, const char *key, const char *cn, int64_t now_s,
             enum vt_tls_check_fault want, enum vt_tls_check_file file, const char *why)
{
    struct vt_tls_check r;
    int rc = check(ca, cert, key, cn, now_s, &r);
    if (r.fault != want || r.file != file || strstr(r.why, why) == NULL)
        fail_msg("%s/%s/%s: got %s (file %d) '%s', want %s (file %d) with '%s'", ca, cert, key,
                 vt_tls_check_fault_name(r.fault), (int)r.file, r.why,
                 vt_tls_check_fault_name(want), (int)file, why);
    assert_true(rc < 0);
}

static int
setup(void **state)
{
    (void)state;
    const char *env = getenv("VT_TEST_CERTS");
    snprintf(certs, sizeof(certs), "%s", env ? env : VT_BINARY_DIR "/test-certs");
    struct stat st;
    char ca[600];
    snprintf(ca, sizeof(ca), "%s/ca.pem", certs);
    if (stat(ca, &st) != 0) {
        char cmd[1400];
        snprintf(cmd, sizeof(cmd), "'%s/scripts/gen-certs.sh' '%s' >/dev/null", VT_SOURCE_DIR,
                 certs);
        if (system(cmd) != 0)
            return -1;
    }
    if (mkdtemp(scratch) == NULL)
        return -1;
    FILE *f = fopen(path("@junk.pem"), "w");
    if (f == NULL)
        return -1;
    fputs("this is not PEM\n", f);
    fclose(f);
    return mkdir(path("@dir.pem"), 0755);
}

static int
teardown(void **state)
{
    (void)state;
    unlink(path("@junk.pem"));
    rmdir(path("@dir.pem"));
    rmdir(scratch);
    return 0;
}

static void
test_vt_tls_check_files_good_identity(void **state)
{
    (void)state;
    struct vt_tls_check r;
    assert_int_equal(check("ca.pem", N1 ".pem", N1 ".key", N1, 0, &r), 0);
    assert_int_equal(r.fault, VT_TLS_FAULT_NONE);
    assert_string_equal(r.cn, N1);
    /* any valid CN without an expected one; the CN compares ignoring case */
    assert_int_equal(check("ca.pem", "1.pem", "1.key", NULL, 0, &r), 0);
    assert_string_equal(r.cn, "1");
    assert_int_equal(check("ca.pem", N1 ".pem", N1 ".key", "00000000-0000-4000-8000-00000000000"
                                                           "1", 0, &r),
                     0);
    assert_int_equal(check("ca.pem", C1 ".pem", C1 ".key", "11111111-1111-4111-8111-111111111111",
                           0, &r),
                     0);
}

static void
test_vt_tls_check_files_missing_or_not_a_file(void **state)
{
    (void)state;
    expect_fault("nope.pem", N1 ".pem", N1 ".key", N1, 0, VT_TLS_FAULT_MISSING, VT_TLS_FILE_CA,
                 "CA file");
    expect_fault("ca.pem", "nope.pem", N1 ".key", N1, 0, VT_TLS_FAULT_MISSING, VT_TLS_FILE_CERT,
                 "nope.pem does not exist");
    expect_fault("ca.pem", N1 ".pem", "nope/" N1 ".key", N1, 0, VT_TLS_FAULT_MISSING,
                 VT_TLS_FILE_KEY, "key file");
    expect_fault("ca.pem", "@dir.pem", N1 ".key", N1, 0, VT_TLS_FAULT_NOT_FILE, VT_TLS_FILE_CERT,
                 "is not a regular file (it is a directory)");
    struct vt_tls_files unset = {.ca_file = NULL, .cert_file = "x", .key_file = "y"};
    struct vt_tls_check r;
    assert_int_equal(vt_tls_check_files(&unset, NULL, 0, &r), -ENOENT);
    assert_string_equal(r.why, "CA file is not set");
}

static void
test_vt_tls_check_files_unreadable(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip(); /* root reads a mode-000 file: nothing to refuse */
    FILE *f = fopen(path("@locked.pem"), "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(chmod(path("@locked.pem"), 0), 0);
    expect_fault("ca.pem", "@locked.pem", N1 ".key", N1, 0, VT_TLS_FAULT_UNREADABLE,
                 VT_TLS_FILE_CERT, "cannot be read");
    unlink(path("@locked.pem"));
}

static void
test_vt_tls_check_files_not_pem(void **state)
{
    (void)state;
    expect_fault("@junk.pem", N1 ".pem", N1 ".key", N1, 0, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_CA,
                 "holds no PEM certificate");
    expect_fault("ca.pem", "@junk.pem", N1 ".key", N1, 0, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_CERT,
                 "holds no PEM certificate");
    expect_fault("ca.pem", N1 ".pem", "@junk.pem", N1, 0, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_KEY,
                 "holds no PEM private key");
    /* a certificate where the key should be is not a key either */
    expect_fault("ca.pem", N1 ".pem", N1 ".pem", N1, 0, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_KEY,
                 "holds no PEM private key");
}

static void
test_vt_tls_check_files_key_mismatch(void **state)
{
    (void)state;
    expect_fault("ca.pem", N1 ".pem", N2 ".key", N1, 0, VT_TLS_FAULT_KEY_MISMATCH,
                 VT_TLS_FILE_KEY, "is not the key of the certificate in");
}

static void
test_vt_tls_check_files_other_ca(void **state)
{
    (void)state;
    expect_fault("ca.pem", "other-ca/client.pem", "other-ca/client.key", C1, 0,
                 VT_TLS_FAULT_UNKNOWN_CA, VT_TLS_FILE_CERT, "is not signed by the CA in");
    /* a CA file holding only a leaf certificate signs nothing */
    expect_fault(N2 ".pem", N1 ".pem", N1 ".key", N1, 0, VT_TLS_FAULT_UNKNOWN_CA,
                 VT_TLS_FILE_CERT, "is not signed by the CA in");
}

static void
test_vt_tls_check_files_validity_period(void **state)
{
    (void)state;
    expect_fault("ca.pem", "expired.pem", "expired.key", C1, 0, VT_TLS_FAULT_EXPIRED,
                 VT_TLS_FILE_CERT, "expired at Jan  2 00:00:00 2020 GMT");
    expect_fault("ca.pem", "future.pem", "future.key", C1, 0, VT_TLS_FAULT_NOT_YET_VALID,
                 VT_TLS_FILE_CERT, "is not valid before Jan  1 00:00:00 2099 GMT");
    /* a good certificate (825 days) checked 900 days from now: the leaf has expired, the CA
     * (3650 days) has not */
    int64_t now = (int64_t)time(NULL);
    expect_fault("ca.pem", N1 ".pem", N1 ".key", N1, now + 900 * 86400, VT_TLS_FAULT_EXPIRED,
                 VT_TLS_FILE_CERT, "certificate");
    /* 4000 days from now the CA has expired too */
    struct vt_tls_check r;
    assert_int_equal(check("ca.pem", N1 ".pem", N1 ".key", N1, now + 4000 * 86400, &r), -EINVAL);
    assert_int_equal(r.fault, VT_TLS_FAULT_EXPIRED);
}

static void
test_vt_tls_check_files_cn(void **state)
{
    (void)state;
    struct vt_tls_check r;
    expect_fault("ca.pem", N2 ".pem", N2 ".key", N1, 0, VT_TLS_FAULT_WRONG_CN, VT_TLS_FILE_CERT,
                 "has CN \"" N2 "\", expected \"" N1 "\"");
    assert_int_equal(check("ca.pem", N2 ".pem", N2 ".key", N1, 0, &r), -EINVAL);
    assert_string_equal(r.cn, N2);
    expect_fault("ca.pem", "invalid-cn.pem", "invalid-cn.key", NULL, 0, VT_TLS_FAULT_BAD_CN,
                 VT_TLS_FILE_CERT, "\"not a uuid\", which is not a UUID or a decimal id");
    expect_fault("ca.pem", "no-cn.pem", "no-cn.key", NULL, 0, VT_TLS_FAULT_BAD_CN,
                 VT_TLS_FILE_CERT, "has no subject CN");
    expect_fault("ca.pem", "two-cn.pem", "two-cn.key", C1, 0, VT_TLS_FAULT_BAD_CN,
                 VT_TLS_FILE_CERT, "has several subject CNs");
}

static void
test_vt_tls_check_fault_name_every_fault(void **state)
{
    (void)state;
    assert_string_equal(vt_tls_check_fault_name(VT_TLS_FAULT_WRONG_CN), "wrong_cn");
    assert_string_equal(vt_tls_check_fault_name(VT_TLS_FAULT_EXPIRED), "expired");
    for (int f = 0; f < VT_TLS_FAULT_COUNT; f++)
        assert_string_not_equal(vt_tls_check_fault_name((enum vt_tls_check_fault)f), "unknown");
    assert_string_equal(vt_tls_check_fault_name(VT_TLS_FAULT_COUNT), "unknown");
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_tls_check_files_good_identity),
        cmocka_unit_test(test_vt_tls_check_files_missing_or_not_a_file),
        cmocka_unit_test(test_vt_tls_check_files_unreadable),
        cmocka_unit_test(test_vt_tls_check_files_not_pem),
        cmocka_unit_test(test_vt_tls_check_files_key_mismatch),
        cmocka_unit_test(test_vt_tls_check_files_other_ca),
        cmocka_unit_test(test_vt_tls_check_files_validity_period),
        cmocka_unit_test(test_vt_tls_check_files_cn),
        cmocka_unit_test(test_vt_tls_check_fault_name_every_fault),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
