/* Unit tests for runtime/vt_file's vt_file_mkdir_p (mkdir -p) on a real
 * temporary directory: existing directories, nested creation with repeated
 * and trailing slashes, a component that is a regular file or a dangling
 * symlink (the error names it), a component over NAME_MAX, a path over
 * PATH_MAX and an empty path; and vt_file_dir_check, the boot check of a data
 * directory: every refusal (a file, under /proc or /sys, not writable, too
 * little space, statvfs failing) with its message. The file seam itself is
 * covered by the log and meta store tests. */
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
fake_free_1000(const char *path, uint64_t *bytes)
{
    (void)path;
    *bytes = 1000;
    return 0;
}

static int
fake_free_eio(const char *path, uint64_t *bytes)
{
    (void)path;
    (void)bytes;
    return -EIO;
}

static void
test_vt_file_dir_check_existing_or_creatable(void **state)
{
    (void)state;
    char why[512] = "";
    uint64_t avail = 0;
    assert_int_equal(vt_file_dir_check(root, 4096, NULL, &avail, why, sizeof(why)), 0);
    assert_true(avail >= 4096);
    /* missing: checked where mkdir -p would start, and nothing is created */
    assert_int_equal(vt_file_dir_check(at("new/deeper/dir"), 0, NULL, NULL, why, sizeof(why)), 0);
    assert_false(is_dir(at("new")));
    /* a relative path starts from the working directory */
    assert_int_equal(vt_file_dir_check("vt-no-such-dir/x", 0, NULL, NULL, why, sizeof(why)), 0);
    assert_int_equal(vt_file_dir_check("", 0, NULL, NULL, why, sizeof(why)), -EINVAL);
}

static void
test_vt_file_dir_check_not_a_directory(void **state)
{
    (void)state;
    char why[512];
    int fd = open(at("plain"), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(vt_file_dir_check(at("plain"), 0, NULL, NULL, why, sizeof(why)), -ENOTDIR);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "%s is a regular file, not a directory", at("plain"));
    assert_string_equal(why, want);
    assert_int_equal(vt_file_dir_check(at("plain/data"), 0, NULL, NULL, why, sizeof(why)),
                     -ENOTDIR);
    snprintf(want, sizeof(want), "%s cannot be created: %s is a regular file, not a directory",
             at("plain/data"), at("plain"));
    assert_string_equal(why, want);
    assert_int_equal(vt_file_dir_check("/dev/null", 0, NULL, NULL, why, sizeof(why)), -ENOTDIR);
    assert_string_equal(why, "/dev/null is not a directory");
    unlink(at("plain"));
}

static void
test_vt_file_dir_check_kernel_file_systems(void **state)
{
    (void)state;
    char why[512];
    assert_int_equal(vt_file_dir_check("/proc/self", 0, NULL, NULL, why, sizeof(why)), -EINVAL);
    assert_string_equal(why, "/proc/self is under /proc (a kernel file system), not a place for "
                             "data");
    assert_int_equal(vt_file_dir_check("/sys/vtop-data", 0, NULL, NULL, why, sizeof(why)),
                     -EINVAL);
    assert_non_null(strstr(why, "is under /sys"));
    /* a symlink into /proc counts as /proc */
    assert_int_equal(symlink("/proc/self", at("procish")), 0);
    assert_int_equal(vt_file_dir_check(at("procish/x"), 0, NULL, NULL, why, sizeof(why)),
                     -EINVAL);
    unlink(at("procish"));
}

static void
test_vt_file_dir_check_not_writable(void **state)
{
    (void)state;
    if (geteuid() == 0)
        skip(); /* root writes a mode-0555 directory: nothing to refuse */
    char why[512];
    assert_int_equal(mkdir(at("ro"), 0555), 0);
    assert_int_equal(vt_file_dir_check(at("ro"), 0, NULL, NULL, why, sizeof(why)), -EACCES);
    assert_non_null(strstr(why, "is not writable"));
    assert_int_equal(vt_file_dir_check(at("ro/sub"), 0, NULL, NULL, why, sizeof(why)), -EACCES);
    assert_non_null(strstr(why, "cannot be created"));
    rmdir(at("ro"));
}

static void
test_vt_file_dir_check_free_space(void **state)
{
    (void)state;
    char why[512];
    char want[PATH_MAX + 128];
    uint64_t avail = 0;
    assert_int_equal(vt_file_dir_check(root, 4096, fake_free_1000, &avail, why, sizeof(why)),
                     -ENOSPC);
    assert_int_equal(avail, 1000);
    snprintf(want, sizeof(want), "%s: 1000 bytes free, fewer than the 4096 needed", root);
    assert_string_equal(why, want);
    assert_int_equal(vt_file_dir_check(root, 1000, fake_free_1000, NULL, why, sizeof(why)), 0);
    /* no real file system has 2^64 - 1 bytes free */
    assert_int_equal(vt_file_dir_check(root, UINT64_MAX, NULL, NULL, why, sizeof(why)), -ENOSPC);
    assert_int_equal(vt_file_dir_check(root, 0, fake_free_eio, NULL, why, sizeof(why)), -EIO);
    snprintf(want, sizeof(want), "statvfs %s: %s", root, strerror(EIO));
    assert_string_equal(why, want);
    assert_int_equal(vt_file_free_bytes("/nonexistent/vtop", &avail), -ENOENT);
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
        cmocka_unit_test(test_vt_file_dir_check_existing_or_creatable),
        cmocka_unit_test(test_vt_file_dir_check_not_a_directory),
        cmocka_unit_test(test_vt_file_dir_check_kernel_file_systems),
        cmocka_unit_test(test_vt_file_dir_check_not_writable),
        cmocka_unit_test(test_vt_file_dir_check_free_space),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
