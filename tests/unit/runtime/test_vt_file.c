/* Unit tests for runtime/vt_file's vt_file_mkdir_p (mkdir -p) on a real
 * temporary directory: existing directories, nested creation with repeated
 * and trailing slashes, a component that is a regular file or a dangling
 * symlink (the error names it), a component over NAME_MAX, a path over
 * PATH_MAX and an empty path. The file seam itself is covered by the log and
 * meta store tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_file.h"

static char root[64];

static const char *
at(const char *rel)
{
    static char buf[4][PATH_MAX];
    static int i;
    i = (i + 1) % 4;
    snprintf(buf[i], sizeof(buf[i]), "%s/%s", root, rel);
    return buf[i];
}

static bool
is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void
test_vt_file_mkdir_p_existing_dir(void **state)
{
    (void)state;
    char err[512] = "";
    assert_int_equal(vt_file_mkdir_p(root, 0755, err, sizeof(err)), 0);
    assert_int_equal(vt_file_mkdir_p("/", 0755, err, sizeof(err)), 0);
    assert_string_equal(err, "");
}

static void
test_vt_file_mkdir_p_nested(void **state)
{
    (void)state;
    char err[512] = "";
    assert_int_equal(vt_file_mkdir_p(at("a/b/c"), 0700, err, sizeof(err)), 0);
    assert_true(is_dir(at("a/b/c")));
    struct stat st;
    assert_int_equal(stat(at("a/b/c"), &st), 0);
    mode_t um = umask(0);
    umask(um);
    assert_int_equal(st.st_mode & 0777, 0700 & ~um); /* the mode is passed to mkdir */
    assert_int_equal(vt_file_mkdir_p(at("a//b/d/e/"), 0755, err, sizeof(err)), 0);
    assert_true(is_dir(at("a/b/d/e")));
    assert_int_equal(vt_file_mkdir_p(at("a/b/c"), 0755, err, sizeof(err)), 0); /* again */
    /* through a symlink to a directory */
    assert_int_equal(symlink(at("a/b"), at("link")), 0);
    assert_int_equal(vt_file_mkdir_p(at("link/f/g"), 0755, err, sizeof(err)), 0);
    assert_true(is_dir(at("a/b/f/g")));
}

static void
test_vt_file_mkdir_p_component_is_a_file(void **state)
{
    (void)state;
    int fd = open(at("plain"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
    char err[512], want[600];
    snprintf(want, sizeof(want), "mkdir %s: Not a directory", at("plain"));
    assert_int_equal(vt_file_mkdir_p(at("plain/sub/dir"), 0755, err, sizeof(err)), -ENOTDIR);
    assert_string_equal(err, want);
    assert_int_equal(vt_file_mkdir_p(at("plain"), 0755, err, sizeof(err)), -ENOTDIR);
    assert_string_equal(err, want);
}

static void
test_vt_file_mkdir_p_dangling_symlink(void **state)
{
    (void)state;
    assert_int_equal(symlink(at("nowhere/at/all"), at("dangling")), 0);
    char err[512], want[600];
    snprintf(want, sizeof(want), "mkdir %s: No such file or directory", at("dangling"));
    assert_int_equal(vt_file_mkdir_p(at("dangling/x"), 0755, err, sizeof(err)), -ENOENT);
    assert_string_equal(err, want);
}

static void
test_vt_file_mkdir_p_component_too_long(void **state)
{
    (void)state;
    char rel[400];
    memset(rel, 'n', NAME_MAX + 1);
    snprintf(rel + NAME_MAX + 1, sizeof(rel) - NAME_MAX - 1, "/sub");
    char err[512];
    assert_int_equal(vt_file_mkdir_p(at(rel), 0755, err, sizeof(err)), -ENAMETOOLONG);
    assert_non_null(strstr(err, "nnnn"));
    assert_non_null(strstr(err, ": File name too long"));
    assert_memory_equal(err, "mkdir ", 6);
}

static void
test_vt_file_mkdir_p_path_too_long(void **state)
{
    (void)state;
    size_t n = PATH_MAX + 10;
    char *p = malloc(n + 1);
    assert_non_null(p);
    int k = snprintf(p, n + 1, "%s/", root);
    for (size_t i = (size_t)k; i < n; i++)
        p[i] = (i % 10 == 9) ? '/' : 'd';
    p[n] = '\0';
    char err[512];
    assert_int_equal(vt_file_mkdir_p(p, 0755, err, sizeof(err)), -ENAMETOOLONG);
    assert_non_null(strstr(err, "...: File name too long"));
    assert_memory_equal(err, "mkdir ", 6);
    char *slash = strchr(p + k, '/');
    assert_non_null(slash);
    *slash = '\0';
    struct stat st;
    assert_int_equal(stat(p, &st), -1); /* nothing was created */
    free(p);
    assert_int_equal(vt_file_mkdir_p("", 0755, err, sizeof(err)), -EINVAL);
    assert_string_equal(err, "mkdir: empty path");
}

static int
group_setup(void **state)
{
    (void)state;
    snprintf(root, sizeof(root), "/tmp/vt-test-file-XXXXXX");
    return mkdtemp(root) != NULL ? 0 : -1;
}

static int
group_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vt_file_mkdir_p_existing_dir),
        cmocka_unit_test(test_vt_file_mkdir_p_nested),
        cmocka_unit_test(test_vt_file_mkdir_p_component_is_a_file),
        cmocka_unit_test(test_vt_file_mkdir_p_dangling_symlink),
        cmocka_unit_test(test_vt_file_mkdir_p_component_too_long),
        cmocka_unit_test(test_vt_file_mkdir_p_path_too_long),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
