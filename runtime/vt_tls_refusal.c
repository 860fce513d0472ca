/* What the TLS transport does with a refused connection besides closing
 * it: the class an inbound refusal is counted under (enum vt_tls_rclass),
 * the log line with its rate limit per reason, and the per-plane refusal
 * counters an owner registers and hooks into its listener policy.
 * Owns: the per-thread rate limiters of refusal lines. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_diag.h"
#include "vt_metrics.h"
#include "vt_runtime.h"
#include "vt_tls.h"
#include "vt_tls_int.h"

#define REFUSAL_LOG_INTERVAL_MS 1000u

enum vt_tls_rclass
vt_tls_refusal_class(enum vt_tls_refusal r)
{
    switch (r) {
    case VT_TLS_REFUSAL_UNKNOWN_CA:
        return VT_TLS_RCLASS_UNKNOWN_CA;
    case VT_TLS_REFUSAL_EXPIRED:
        return VT_TLS_RCLASS_EXPIRED;
    case VT_TLS_REFUSAL_BAD_CN:
    case VT_TLS_REFUSAL_CN_NOT_ALLOWED:
        return VT_TLS_RCLASS_CN_NOT_ALLOWED;
    case VT_TLS_REFUSAL_NO_CERT:
        return VT_TLS_RCLASS_NO_CERT;
    case VT_TLS_REFUSAL_HANDSHAKE:
    case VT_TLS_REFUSAL_PLAINTEXT:
    case VT_TLS_REFUSAL_BAD_CERT:
    case VT_TLS_REFUSAL_BY_PEER:
        return VT_TLS_RCLASS_PROTOCOL;
    case VT_TLS_REFUSAL_TIMEOUT:
        return VT_TLS_RCLASS_HANDSHAKE_TIMEOUT;
    case VT_TLS_REFUSAL_OVER_LIMIT:
        return VT_TLS_RCLASS_OVER_LIMIT;
    case VT_TLS_REFUSAL_NONE:
    case VT_TLS_REFUSAL_CONNECT:
    case VT_TLS_REFUSAL_COUNT:
        break;
    }
    return VT_TLS_RCLASS_COUNT;
}

const char *
vt_tls_rclass_name(enum vt_tls_rclass c)
{
    static const char *const names[VT_TLS_RCLASS_COUNT] = {
        [VT_TLS_RCLASS_UNKNOWN_CA] = "unknown_ca",
        [VT_TLS_RCLASS_EXPIRED] = "expired",
        [VT_TLS_RCLASS_CN_NOT_ALLOWED] = "cn_not_allowed",
        [VT_TLS_RCLASS_NO_CERT] = "no_cert",
        [VT_TLS_RCLASS_PROTOCOL] = "protocol",
        [VT_TLS_RCLASS_HANDSHAKE_TIMEOUT] = "handshake_timeout",
        [VT_TLS_RCLASS_OVER_LIMIT] = "over_limit",
    };
    if ((unsigned)c >= VT_TLS_RCLASS_COUNT)
        return "unknown";
    return names[c];
}

/* ---- the log line ------------------------------------------------------- */

/* One limiter per reason and thread (a reactor's refusals are its own): a
 * burst of one reason cannot hide the first line of another. Inbound lines
 * are limited per class (what the counters say), outbound per refusal. */
static _Thread_local struct vt_diag_rl rl_inbound[VT_TLS_RCLASS_COUNT];
static _Thread_local struct vt_diag_rl rl_outbound[VT_TLS_REFUSAL_COUNT];

void
vt_tls__refusal_log(bool inbound, const char *peer, enum vt_tls_refusal ref, const char *reason)
{
    VT_ASSERT((unsigned)ref < VT_TLS_REFUSAL_COUNT && ref != VT_TLS_REFUSAL_NONE);
    if (!vt_diag_enabled(VT_DIAG_WARN))
        return;
    uint64_t suppressed = 0;
    const char *fine = vt_tls_refusal_name(ref);
    if (inbound) {
        enum vt_tls_rclass cl = vt_tls_refusal_class(ref);
        VT_ASSERT(cl < VT_TLS_RCLASS_COUNT);
        if (!vt_diag_rl_allow(&rl_inbound[cl], REFUSAL_LOG_INTERVAL_MS, &suppressed))
            return;
        const char *name = vt_tls_rclass_name(cl);
        bool same = strcmp(name, fine) == 0;
        vt_diag_write_rl(VT_DIAG_WARN, __FILE__, __LINE__, suppressed,
                         "tls: inbound connection from %s refused: %s (%s%s%s)", peer, reason, name,
                         same ? "" : ": ", same ? "" : fine);
        return;
    }
    if (!vt_diag_rl_allow(&rl_outbound[ref], REFUSAL_LOG_INTERVAL_MS, &suppressed))
        return;
    bool failed = ref == VT_TLS_REFUSAL_CONNECT || ref == VT_TLS_REFUSAL_TIMEOUT;
    vt_diag_write_rl(VT_DIAG_WARN, __FILE__, __LINE__, suppressed,
                     "tls: outbound connection to %s %s: %s (%s)", peer,
                     failed ? "failed" : "refused", reason, fine);
}

/* ---- per-plane counters -------------------------------------------------- */

static bool
plane_name_ok(const char *plane)
{
    size_t n = plane != NULL ? strlen(plane) : 0;
    return n > 0 && n <= 32 && strspn(plane, "abcdefghijklmnopqrstuvwxyz_") == n;
}

int
vt_tls_refusal_metrics_register(struct vt_tls_refusal_metrics *rm, struct vt_metrics *m,
                                const char *plane)
{
    VT_ASSERT(rm != NULL && m != NULL);
    if (!plane_name_ok(plane))
        return -EINVAL;
    rm->m = m;
    for (unsigned i = 0; i < VT_TLS_RCLASS_COUNT; i++) {
        char labels[96];
        snprintf(labels, sizeof(labels), "plane=\"%s\",reason=\"%s\"", plane,
                 vt_tls_rclass_name((enum vt_tls_rclass)i));
        rm->ids[i] = vt_metrics_counter(m, "tls_refusals_total", labels,
                                        "Inbound TLS connections refused before they opened, "
                                        "by listener plane and reason.",
                                        0);
        if (rm->ids[i] < 0)
            return rm->ids[i];
    }
    return 0;
}

static void
count_refusal(struct vt_core *core, enum vt_tls_rclass why, void *arg)
{
    const struct vt_tls_refusal_metrics *rm = arg;
    VT_ASSERT((unsigned)why < VT_TLS_RCLASS_COUNT && vt_core_self() == core);
    vt_metric_add(vt_metrics_shard(rm->m, vt_core_id(core)), rm->ids[why], 1);
}

void
vt_tls_refusal_metrics_attach(const struct vt_tls_refusal_metrics *rm, struct vt_conn_policy *p)
{
    VT_ASSERT(rm != NULL && rm->m != NULL && p != NULL);
    p->on_refused = count_refusal;
    p->refused_arg = (void *)rm;
}
