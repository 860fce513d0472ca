/* Per-core I/O threads: the only place file syscalls that can block run.
 * The reactor pushes struct vt_io_req pointers on an SPSC ring; the I/O
 * thread runs them in order through the core's vt_file_ops and pushes them
 * back on a completion ring, waking the reactor if it sleeps. */
#include "vt_runtime_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "vt_clock.h"
#include "vt_diag.h"
#include "vt_tsan.h"

static int
ptr_ring_init(struct vt_ptr_ring *r, unsigned slots)
{
    r->buf = calloc(slots, sizeof(*r->buf));
    if (r->buf == NULL)
        return -ENOMEM;
    ck_ring_init(&r->ring, slots);
    return 0;
}

static bool
ptr_ring_push(struct vt_ptr_ring *r, void *p)
{
    VT_TSAN_ACQUIRE(&r->ring.c_head);
    void **slot = ck_ring_enqueue_reserve_spsc(&r->ring, r->buf);
    if (slot == NULL)
        return false;
    *slot = p;
    VT_TSAN_RELEASE(&r->ring.p_tail);
    ck_ring_enqueue_commit_spsc(&r->ring);
    return true;
}

static void *
ptr_ring_pop(struct vt_ptr_ring *r)
{
    void *p = NULL;
    if (ck_ring_size(&r->ring) == 0)
        return NULL;
    VT_TSAN_ACQUIRE(&r->ring.p_tail);
    bool ok = ck_ring_dequeue_spsc(&r->ring, r->buf, &p);
    VT_ASSERT(ok);
    VT_TSAN_RELEASE(&r->ring.c_head);
    return p;
}

int
vt_io__init(struct vt_core *c, unsigned slots, char *err, size_t err_len)
{
    struct vt_io_thread *io = &c->io;
    io->core = c;
    io->wake_fd = eventfd(0, EFD_CLOEXEC); /* blocking: the I/O thread sleeps on it */
    if (io->wake_fd < 0 || ptr_ring_init(&io->req, slots) != 0 ||
        ptr_ring_init(&io->done, slots) != 0) {
        snprintf(err, err_len, "core %u: I/O thread setup: %s", c->id, strerror(errno));
        return -ENOMEM;
    }
    return 0;
}

static int64_t
run_op(const struct vt_file_ops *ops, struct vt_io_req *r)
{
    switch (r->op) {
    case VT_IO_OPEN:
        return ops->open(ops->ctx, r->path, r->flags, r->mode);
    case VT_IO_CLOSE:
        return ops->close(ops->ctx, r->fd);
    case VT_IO_PWRITE:
        return vt_file_pwrite_all(ops, r->fd, r->buf, r->len, r->off);
    case VT_IO_PREAD:
        return vt_file_pread_all(ops, r->fd, r->buf, r->len, r->off);
    case VT_IO_FDATASYNC:
        return ops->fdatasync(ops->ctx, r->fd);
    case VT_IO_FSYNC:
        return ops->fsync(ops->ctx, r->fd);
    case VT_IO_RENAME:
        return ops->rename(ops->ctx, r->path, r->path2);
    case VT_IO_FSYNC_DIR:
        return ops->fsync_dir(ops->ctx, r->path);
    case VT_IO_UNLINK:
        return ops->unlink(ops->ctx, r->path);
    case VT_IO_FALLOCATE:
        return ops->fallocate(ops->ctx, r->fd, r->off, r->len);
    case VT_IO_FTRUNCATE:
        return ops->ftruncate(ops->ctx, r->fd, r->len);
    case VT_IO_CALL:
        return r->call(ops, r->call_arg);
    }
    return -EINVAL;
}

/* Blocks until the reactor queues work (or asks us to stop). */
static void
io_sleep(struct vt_io_thread *io)
{
    atomic_store(&io->sleeping, 1);
    if (ck_ring_size(&io->req.ring) == 0) {
        uint64_t v;
        ssize_t n = read(io->wake_fd, &v, sizeof(v));
        (void)n;
    }
    atomic_store(&io->sleeping, 0);
}

static void *
io_main(void *arg)
{
    struct vt_io_thread *io = arg;
    struct vt_core *c = io->core;
    char label[32];
    snprintf(label, sizeof(label), "io %u", c->id);
    vt_diag_set_thread_label(label);
    const struct vt_file_ops *ops = vt_runtime_file_ops(c->rt);
    for (;;) {
        struct vt_io_req *r = ptr_ring_pop(&io->req);
        if (r == NULL) {
            io_sleep(io);
            continue;
        }
        if (r->op == 0) /* the stop sentinel (see vt_io__stop) */
            break;
        r->result = run_op(ops, r);
        r->done_ns = vt_clock_mono_ns();
        bool ok = ptr_ring_push(&io->done, r);
        VT_ASSERT(ok); /* in-flight <= ring capacity */
        vt_runtime__wake(c);
    }
    return NULL;
}

int
vt_io__start(struct vt_core *c)
{
    int rc = pthread_create(&c->io.thread, NULL, io_main, &c->io);
    if (rc != 0)
        return -rc;
    c->io.started = true;
    return 0;
}

static void
io_wake(struct vt_io_thread *io)
{
    vt_rt__full_fence();
    if (atomic_load_explicit(&io->sleeping, memory_order_relaxed)) {
        uint64_t one = 1;
        ssize_t n = write(io->wake_fd, &one, sizeof(one));
        (void)n;
    }
}

static struct vt_io_req io_stop_sentinel; /* op == 0; never touched */

void
vt_io__stop(struct vt_core *c)
{
    struct vt_io_thread *io = &c->io;
    if (!io->started)
        return;
    /* The reactor has exited, so this thread is now the ring's only producer. */
    while (!ptr_ring_push(&io->req, &io_stop_sentinel))
        usleep(1000);
    uint64_t one = 1;
    ssize_t n = write(io->wake_fd, &one, sizeof(one));
    (void)n;
    pthread_join(io->thread, NULL);
    io->started = false;
}

void
vt_io__destroy(struct vt_core *c)
{
    struct vt_io_thread *io = &c->io;
    VT_ASSERT(!io->started);
    free(io->req.buf);
    free(io->done.buf);
    io->req.buf = io->done.buf = NULL;
    if (io->wake_fd >= 0)
        close(io->wake_fd);
    io->wake_fd = -1;
}

int
vt_io_submit(struct vt_core *c, struct vt_io_req *req)
{
    VT_ASSERT(vt_core_self() == c);
    VT_ASSERT(req->op >= VT_IO_OPEN && req->op <= VT_IO_CALL && req->done != NULL);
    VT_ASSERT(req->op != VT_IO_CALL || req->call != NULL);
    struct vt_io_thread *io = &c->io;
    if (io->in_flight >= ck_ring_capacity(&io->req.ring) - 1)
        return -EAGAIN;
    req->submit_ns = vt_clock_mono_ns();
    req->result = 0;
    bool ok = ptr_ring_push(&io->req, req);
    VT_ASSERT(ok);
    io->in_flight++;
    VT_STAT_INC(c, io_submitted, 1);
    io_wake(io);
    return 0;
}

bool
vt_io__has_completions(struct vt_core *c)
{
    return ck_ring_size(&c->io.done.ring) > 0;
}

unsigned
vt_io__drain(struct vt_core *c, unsigned max)
{
    unsigned n = 0;
    struct vt_io_req *r;
    while (n < max && (r = ptr_ring_pop(&c->io.done)) != NULL) {
        VT_ASSERT(c->io.in_flight > 0);
        c->io.in_flight--;
        n++;
        r->done(c, r);
    }
    if (n == max && vt_io__has_completions(c))
        c->more_work = true;
    return n;
}
