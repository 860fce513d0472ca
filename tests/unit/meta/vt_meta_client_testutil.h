/* Helpers shared by the metadata client tests (test_vt_meta_client*.c):
 * certificates, running code on a core, free loopback ports, and recording
 * completions. Header-only; every function is static inline and every
 * file-scope variable belongs to the one test executable that includes it.
 *
 * Certificates: VT_BINARY_DIR/<dir> made with scripts/gen-certs.sh when
 * missing (each executable names its own directory, so they may run in
 * parallel). Meta nodes are CN "1".."3"; the data node client is
 * MC_NODE_CN. */
#ifndef VT_META_CLIENT_TESTUTIL_H
#define VT_META_CLIENT_TESTUTIL_H

#include <errno.h>
#include <netinet/in.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "vt_meta_client.h"
#include "vt_runtime.h"
#include "vt_testutil.h"
#include "vt_tls.h"

#define MC_WAIT_MS 20000
#define MC_NODE_CN "00000000-0000-4000-8000-000000000001"

static char mc_certs[512];

static inline int
mc_certs_setup(const char *dir)
{
    snprintf(mc_certs, sizeof(mc_certs), "%s/%s", VT_BINARY_DIR, dir);
    char path[700];
    snprintf(path, sizeof(path), "%s/ca.pem", mc_certs);
    struct stat st;
    if (stat(path, &st) == 0)
        return 0;
    char cmd[1400];
    snprintf(cmd, sizeof(cmd), "'%s/scripts/gen-certs.sh' '%s' >/dev/null", VT_SOURCE_DIR,
             mc_certs);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot generate certificates: %s\n", cmd);
        return -1;
    }
    return 0;
}

/* Paths of the certificate of `cn` (static buffers, one set per call site). */
struct mc_files {
    char ca[700], cert[700], key[700];
};

static inline struct vt_tls_files
mc_files(struct mc_files *f, const char *cn)
{
    snprintf(f->ca, sizeof(f->ca), "%s/ca.pem", mc_certs);
    snprintf(f->cert, sizeof(f->cert), "%s/%s.pem", mc_certs, cn);
    snprintf(f->key, sizeof(f->key), "%s/%s.key", mc_certs, cn);
    return (struct vt_tls_files){.ca_file = f->ca, .cert_file = f->cert, .key_file = f->key};
}

static inline struct vt_tls_ctx *
mc_ctx(const char *cn, bool server)
{
    struct mc_files f;
    struct vt_tls_files files = mc_files(&f, cn);
    char err[300];
    struct vt_tls_ctx *ctx = vt_tls_ctx_new(&files, server, err, sizeof(err));
    if (ctx == NULL)
        fail_msg("TLS context for %s: %s", cn, err);
    return ctx;
}

/* ---- running code on a core --------------------------------------------------------- */

struct mc_call {
    void (*fn)(struct vt_core *, void *);
    void *arg;
    _Atomic int done;
};

static inline void
mc_call_msg(struct vt_core *core, const struct vt_msg *m)
{
    struct mc_call *c = m->ptr;
    c->fn(core, c->arg);
    atomic_store(&c->done, 1);
}

static inline void
mc_run_on(struct vt_runtime *rt, unsigned core, void (*fn)(struct vt_core *, void *), void *arg)
{
    struct mc_call c = {.fn = fn, .arg = arg};
    struct vt_msg m = {.fn = mc_call_msg, .ptr = &c};
    while (vt_runtime_post_external(rt, core, &m) == -EAGAIN)
        sched_yield();
    assert_true(vt_test_wait_flag(&c.done, MC_WAIT_MS));
}

static inline void
mc_nap_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* `n` distinct loopback ports that were free a moment ago. */
static inline void
mc_free_ports(uint16_t *ports, unsigned n)
{
    int fds[16];
    assert_true(n <= 16);
    for (unsigned i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(fds[i] >= 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        assert_int_equal(bind(fds[i], (struct sockaddr *)&a, sizeof(a)), 0);
        socklen_t l = sizeof(a);
        assert_int_equal(getsockname(fds[i], (struct sockaddr *)&a, &l), 0);
        ports[i] = ntohs(a.sin_port);
    }
    for (unsigned i = 0; i < n; i++)
        close(fds[i]);
}

/* ---- completions --------------------------------------------------------------------- */

/* One request's outcome, written on the client's core, read after `done`. */
struct mc_res {
    _Atomic int done;
    _Atomic int calls;
    int rc;
    uint16_t kind;
    uint8_t payload[VT_META_ADMIN_PAYLOAD_MAX];
    size_t len;
    char err[VT_META_CLIENT_ERR_BYTES];
    struct vt_meta_admin_err admin;
    uint64_t index;
    struct vt_meta_response resp;
    struct vt_meta_admin_lease lease;
    struct vt_meta_client *cl; /* for last_error */
};

/* Set around submits: callbacks must never run inside one. */
static _Atomic int mc_in_submit;

static inline void
mc_res_finish(struct mc_res *r, int rc)
{
    assert_int_equal(atomic_load(&mc_in_submit), 0);
    r->rc = rc;
    if (r->cl != NULL) {
        snprintf(r->err, sizeof(r->err), "%s", vt_meta_client_last_error(r->cl));
        r->admin = *vt_meta_client_last_admin_error(r->cl);
    }
    atomic_fetch_add(&r->calls, 1);
    atomic_store(&r->done, 1);
}

static inline void
mc_generic_cb(void *arg, int rc, uint16_t kind, const uint8_t *p, size_t len)
{
    struct mc_res *r = arg;
    r->kind = kind;
    r->len = len;
    if (len)
        memcpy(r->payload, p, len);
    mc_res_finish(r, rc);
}

static inline void
mc_propose_cb(void *arg, int rc, uint64_t index, const struct vt_meta_response *resp)
{
    struct mc_res *r = arg;
    r->index = index;
    if (resp != NULL)
        r->resp = *resp;
    else
        assert_int_not_equal(rc, 0);
    mc_res_finish(r, rc);
}

static inline void
mc_lease_cb(void *arg, int rc, const struct vt_meta_admin_lease *l)
{
    struct mc_res *r = arg;
    if (l != NULL)
        r->lease = *l;
    else
        assert_int_not_equal(rc, 0);
    mc_res_finish(r, rc);
}

static inline void
mc_wait(struct mc_res *r)
{
    if (!vt_test_wait_flag(&r->done, MC_WAIT_MS))
        fail_msg("no completion within %d ms", MC_WAIT_MS);
}

#endif
