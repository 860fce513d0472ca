/* I/O threads: every file op runs off the reactor and completes in order on
 * the submitting core; errors from the file seam reach the caller; the
 * in-flight bound is backpressure. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vt_runtime.h"
#include "vt_testutil.h"

#define NREQ 12

struct io_test {
    char dir[64];
    char path[128], path2[128];
    struct vt_io_req req[NREQ];
    char wbuf[4096], rbuf[4096];
    int64_t results[NREQ];
    int order[NREQ];
    int n_done;
    int step;
    bool on_reactor_thread;
    _Atomic int done;
};
static struct io_test iot;

static void io_next(struct vt_core *c);

static void
io_done(struct vt_core *c, struct vt_io_req *r)
{
    int i = (int)(r - iot.req);
    iot.results[i] = r->result;
    iot.order[iot.n_done++] = i;
    iot.on_reactor_thread = vt_core_self() == c;
    io_next(c);
}

static void
io_submit_step(struct vt_core *c, int i, enum vt_io_op op)
{
    struct vt_io_req *r = &iot.req[i];
    r->op = op;
    r->done = io_done;
    assert_int_equal(vt_io_submit(c, r), 0);
}

static int64_t
io_call_getpid(const struct vt_file_ops *ops, void *arg)
{
    (void)ops;
    (void)arg;
    return 42;
}

/* A fixed script: each step starts when the previous completed, because later
 * steps use the fd from the open. */
static void
io_next(struct vt_core *c)
{
    int fd = (int)iot.results[0];
    struct vt_io_req *r = &iot.req[iot.step];
    switch (iot.step++) {
    case 0:
        r->path = iot.path;
        r->flags = O_CREAT | O_RDWR | O_TRUNC;
        r->mode = 0644;
        io_submit_step(c, 0, VT_IO_OPEN);
        break;
    case 1:
        r->fd = fd;
        r->off = 0;
        r->len = 1 << 20;
        io_submit_step(c, 1, VT_IO_FALLOCATE);
        break;
    case 2:
        r->fd = fd;
        r->buf = iot.wbuf;
        r->len = sizeof(iot.wbuf);
        r->off = 8192;
        io_submit_step(c, 2, VT_IO_PWRITE);
        break;
    case 3:
        r->fd = fd;
        io_submit_step(c, 3, VT_IO_FDATASYNC);
        break;
    case 4:
        r->fd = fd;
        r->buf = iot.rbuf;
        r->len = sizeof(iot.rbuf);
        r->off = 8192;
        io_submit_step(c, 4, VT_IO_PREAD);
        break;
    case 5:
        r->fd = fd;
        r->len = 8192 + sizeof(iot.wbuf);
        io_submit_step(c, 5, VT_IO_FTRUNCATE);
        break;
    case 6:
        r->fd = fd;
        io_submit_step(c, 6, VT_IO_FSYNC);
        break;
    case 7:
        r->fd = fd;
        io_submit_step(c, 7, VT_IO_CLOSE);
        break;
    case 8:
        r->path = iot.path;
        r->path2 = iot.path2;
        io_submit_step(c, 8, VT_IO_RENAME);
        break;
    case 9:
        r->path = iot.dir;
        io_submit_step(c, 9, VT_IO_FSYNC_DIR);
        break;
    case 10:
        r->call = io_call_getpid;
        io_submit_step(c, 10, VT_IO_CALL);
        break;
    case 11:
        r->path = iot.path2;
        io_submit_step(c, 11, VT_IO_UNLINK);
        break;
    default:
        atomic_store(&iot.done, 1);
    }
}

static void
io_start(struct vt_core *c, void *arg)
{
    (void)arg;
    io_next(c);
}

static void
test_io_submit_runs_every_op_off_the_reactor(void **state)
{
    (void)state;
    memset(&iot, 0, sizeof(iot));
    snprintf(iot.dir, sizeof(iot.dir), "/tmp/vt-io-XXXXXX");
    assert_non_null(mkdtemp(iot.dir));
    snprintf(iot.path, sizeof(iot.path), "%s/a", iot.dir);
    snprintf(iot.path2, sizeof(iot.path2), "%s/b", iot.dir);
    for (size_t i = 0; i < sizeof(iot.wbuf); i++)
        iot.wbuf[i] = (char)(i * 7 + 3);
    struct vt_runtime *rt = vt_test_runtime(1, 0);
    assert_int_equal(vt_runtime_start(rt, io_start, NULL), 0);
    assert_true(vt_test_wait_flag(&iot.done, 20000));
    vt_test_runtime_finish(rt);
    assert_true(iot.results[0] >= 0);
    for (int i = 1; i < NREQ; i++)
        if (i != 2 && i != 4 && i != 10)
            assert_int_equal(iot.results[i], 0);
    assert_int_equal(iot.results[2], sizeof(iot.wbuf));
    assert_int_equal(iot.results[4], sizeof(iot.rbuf));
    assert_int_equal(iot.results[10], 42);
    assert_memory_equal(iot.wbuf, iot.rbuf, sizeof(iot.wbuf));
    assert_true(iot.on_reactor_thread);
    for (int i = 0; i < NREQ; i++)
        assert_int_equal(iot.order[i], i);
    assert_int_equal(access(iot.path2, F_OK), -1);
    assert_int_equal(rmdir(iot.dir), 0);
}

/* ---- a failing seam, and the in-flight bound ---------------------------- */

static int
fail_fdatasync(void *ctx, int fd)
{
    (void)ctx;
    (void)fd;
    return -EIO;
}

static ssize_t
fail_pwrite(void *ctx, int fd, const void *buf, size_t len, uint64_t off)
{
    (void)ctx;
    (void)fd;
    (void)buf;
    (void)off;
    return len > 100 ? 100 : -ENOSPC; /* one short write, then ENOSPC */
}

struct bound_test {
    struct vt_io_req r[8];
    int accepted;
    int completed;
    int64_t res[8];
    _Atomic int done;
};
static struct bound_test bt;

static void
bound_done(struct vt_core *c, struct vt_io_req *r)
{
    (void)c;
    bt.res[r - bt.r] = r->result;
    if (++bt.completed == bt.accepted)
        atomic_store(&bt.done, 1);
}

static void
bound_start(struct vt_core *c, void *arg)
{
    (void)arg;
    static char buf[1000];
    for (int i = 0; i < 8; i++) {
        bt.r[i] = (struct vt_io_req){.op = i == 0 ? VT_IO_PWRITE : VT_IO_FDATASYNC,
                                     .fd = 0, .buf = buf, .len = sizeof(buf),
                                     .done = bound_done};
        int rc = vt_io_submit(c, &bt.r[i]);
        if (rc == -EAGAIN)
            break;
        assert_int_equal(rc, 0);
        bt.accepted++;
    }
}

static void
test_io_submit_reports_seam_errors_and_bounds_in_flight(void **state)
{
    (void)state;
    memset(&bt, 0, sizeof(bt));
    struct vt_file_ops ops = vt_file_posix;
    ops.fdatasync = fail_fdatasync;
    ops.pwrite = fail_pwrite;
    struct vt_runtime_config cfg;
    vt_runtime_config_defaults(&cfg);
    cfg.cores = 1;
    cfg.pin = false;
    cfg.io_ring_slots = 4; /* 3 in flight at most */
    cfg.file_ops = &ops;
    char err[256];
    struct vt_runtime *rt = vt_runtime_new(&cfg, err, sizeof(err));
    assert_non_null(rt);
    assert_int_equal(vt_runtime_start(rt, bound_start, NULL), 0);
    assert_true(vt_test_wait_flag(&bt.done, 10000));
    vt_test_runtime_finish(rt);
    assert_int_equal(bt.accepted, 3);
    assert_int_equal(bt.res[0], -ENOSPC); /* short write, then the error */
    assert_int_equal(bt.res[1], -EIO);
    assert_int_equal(bt.res[2], -EIO);
}

int
main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_io_submit_runs_every_op_off_the_reactor),
        cmocka_unit_test(test_io_submit_reports_seam_errors_and_bounds_in_flight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
