/* The one table from range-log codes (negative errnos and producer codes,
 * log/vt_rlog.h, log/vt_producers.h) to wire error classes: code, retryable
 * flag and text, per call site (see vt_repl_host.h). Used by both produce
 * paths, the range actor's durability and read answers and the follower's
 * answers. Owns: the table (immutable). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "vt_producers.h"
#include "vt_proto.h"
#include "vt_proto_err.h"
#include "vt_repl_host.h"
#include "vt_repl_node_int.h"
#include "vt_repl_proto.h"

/* RETRY: the Error body says retryable (a retry can succeed); FINAL: it
 * does not. The unit test checks each against vt_proto_error_retryable. */
#define RETRY(site, rc, code, text)                                                                \
    {                                                                                              \
        VT_REPL_ERR_##site, rc, code, true, text                                                   \
    }
#define FINAL(site, rc, code, text)                                                                \
    {                                                                                              \
        VT_REPL_ERR_##site, rc, code, false, text                                                  \
    }
#define FALLBACK 0 /* the site's row for codes not listed */

static const struct vt_repl_err_class table[] = {
    /* an append refused at once: vt_rlog_append, _append_replica, _when_durable */
    RETRY(APPEND, -EAGAIN, VT_E_OVERLOADED,
          "range is busy (write budget full, or an epoch change or recovery running): retry"),
    RETRY(APPEND, -ENOSPC, VT_E_OVERLOADED,
          "producer table full: the range tracks its maximum number of producer ids; retry"),
    RETRY(APPEND, -ENOMEM, VT_E_OVERLOADED, "out of memory for the write: retry"),
    RETRY(APPEND, -EIO, VT_E_STORAGE, "range is poisoned by an I/O error"),
    RETRY(APPEND, -ECANCELED, VT_E_STORAGE, "range is closing"),
    FINAL(APPEND, -ESTALE, VT_E_FENCED, "range fenced"),
    FINAL(APPEND, -EINVAL, VT_E_INVALID_REQUEST,
          "batch exceeds the range's limits or is malformed"),
    FINAL(APPEND, -ERANGE, VT_E_INVALID_REQUEST,
          "the batch does not start at the log's next offset"),
    FINAL(APPEND, -EEXIST, VT_E_INVALID_REQUEST,
          "the producer table holds this batch at another offset: the replicas disagree"),
    FINAL(APPEND, VT_PRODUCER_FENCED, VT_E_PRODUCER_FENCED,
          "producer epoch is older than one this range has seen (PRODUCER_FENCED)"),
    FINAL(APPEND, VT_SEQ_FIRST, VT_E_SEQUENCE_FIRST,
          "a new producer epoch must start at sequence 0 (SEQ_FIRST)"),
    FINAL(APPEND, VT_SEQ_GAP, VT_E_SEQUENCE_GAP,
          "sequence gap: the batch skips sequences after the last accepted (SEQ_GAP)"),
    FINAL(APPEND, VT_SEQ_CONFLICT, VT_E_SEQUENCE_CONFLICT,
          "sequence conflict: these sequences were accepted with other content (SEQ_CONFLICT)"),
    FINAL(APPEND, VT_SEQ_BELOW_WINDOW, VT_E_SEQUENCE_BELOW_WINDOW,
          "sequence is older than the idempotency window can prove (SEQ_BELOW_WINDOW)"),
    RETRY(APPEND, FALLBACK, VT_E_STORAGE, "range refused the write"),

    /* a vt_rlog_durable_cb's rc: admitted, but not acknowledged */
    FINAL(DURABLE, -ESTALE, VT_E_FENCED, "fenced while the write was in flight: not acknowledged"),
    RETRY(DURABLE, -ENOSPC, VT_E_STORAGE, "range is out of disk space: not acknowledged; retry"),
    RETRY(DURABLE, -EIO, VT_E_STORAGE, "range is poisoned by an I/O error: not acknowledged"),
    RETRY(DURABLE, -ECANCELED, VT_E_STORAGE,
          "range closed or cut before the write was durable: not acknowledged"),
    RETRY(DURABLE, -EAGAIN, VT_E_OVERLOADED, "too many writes awaiting durability: retry"),
    RETRY(DURABLE, FALLBACK, VT_E_STORAGE, "range cannot write"),

    /* vt_rlog_read refused, or its callback's rc */
    RETRY(READ, -EAGAIN, VT_E_OVERLOADED, "too many reads in flight on this range: retry"),
    RETRY(READ, -ENOMEM, VT_E_OVERLOADED, "out of memory for the read: retry"),
    RETRY(READ, -ECANCELED, VT_E_STORAGE, "range is closing"),
    FINAL(READ, -ERANGE, VT_E_WRONG_RANGE, "offset is below the range's retained start"),
    FINAL(READ, -ENOBUFS, VT_E_INVALID_REQUEST, "max_bytes is smaller than the next batch"),
    FINAL(READ, -EBADMSG, VT_E_CORRUPT,
          "damaged on this replica (segment quarantined; nothing damaged served)"),
    RETRY(READ, -EIO, VT_E_STORAGE, "read failed: I/O error"),
    RETRY(READ, FALLBACK, VT_E_STORAGE, "read failed"),

    /* vt_rlog_adopt_epoch / _truncate (a follower's fence), sync or in cb */
    FINAL(EPOCH, -ESTALE, VT_E_FENCED, "this replica holds a newer epoch"),
    RETRY(EPOCH, -EBUSY, VT_E_OVERLOADED, "another epoch change or cut is queued: retry"),
    RETRY(EPOCH, -EAGAIN, VT_E_OVERLOADED,
          "range is busy (recovering, or the I/O queue full): retry"),
    RETRY(EPOCH, -ENOSPC, VT_E_STORAGE, "range is out of disk space: nothing changed; retry"),
    RETRY(EPOCH, -EIO, VT_E_STORAGE, "range is poisoned by an I/O error"),
    RETRY(EPOCH, -ECANCELED, VT_E_STORAGE, "range is closing"),
    FINAL(EPOCH, -EPERM, VT_E_INVALID_REQUEST, "the cut is below the committed HWM"),
    FINAL(EPOCH, -EINVAL, VT_E_INVALID_REQUEST,
          "the cut is not a batch start, is inside a sealed segment, or beyond the log's end"),
    RETRY(EPOCH, -EBADMSG, VT_E_STORAGE, "the range's data is damaged; nothing was cut"),
    RETRY(EPOCH, FALLBACK, VT_E_STORAGE, "range cannot change its epoch"),
};

const struct vt_repl_err_class *
vt_repl_err_table(size_t *n)
{
    *n = sizeof(table) / sizeof(table[0]);
    return table;
}

const struct vt_repl_err_class *
vt_repl_err_class(enum vt_repl_err_site site, int rc)
{
    VT_ASSERT((unsigned)site < VT_REPL_ERR_SITES && rc < 0);
    const struct vt_repl_err_class *fallback = NULL;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        if (table[i].site != site)
            continue;
        if (table[i].rc == rc)
            return &table[i];
        if (table[i].rc == FALLBACK)
            fallback = &table[i];
    }
    VT_ASSERT(fallback != NULL);
    return fallback;
}

uint16_t
vt_repl_err_answer(enum vt_repl_err_site site, int rc, const char *context, char *msg,
                   size_t msg_len)
{
    VT_ASSERT(msg != NULL && msg_len > 0);
    const struct vt_repl_err_class *e = vt_repl_err_class(site, rc);
    const char *sep = context != NULL ? ": " : "";
    if (context == NULL)
        context = "";
    if (e->rc == FALLBACK) /* not listed: say which code it was */
        snprintf(msg, msg_len, "%s%s%s: %s (%d)", context, sep, e->text,
                 rc > -1000 ? strerror(-rc) : vt_producers_code_name(rc), rc);
    else
        snprintf(msg, msg_len, "%s%s%s", context, sep, e->text);
    return e->code;
}

uint16_t
vt_repl_append_refusal(int rc, char *msg, size_t msg_len)
{
    VT_ASSERT(rc != VT_RLOG_APPENDED && rc != VT_RLOG_DUPLICATE);
    return vt_repl_err_answer(VT_REPL_ERR_APPEND, rc, NULL, msg, msg_len);
}

uint16_t
vt_repl__plane_code(uint16_t client_code)
{
    switch (client_code) {
    case VT_E_INVALID_REQUEST:
        return VT_REPL_E_INVALID_REQUEST;
    case VT_E_WRONG_RANGE:
        return VT_REPL_E_WRONG_RANGE;
    case VT_E_FENCED:
        return VT_REPL_E_FENCED;
    case VT_E_OVERLOADED:
        return VT_REPL_E_OVERLOADED;
    case VT_E_STORAGE:
        return VT_REPL_E_STORAGE;
    case VT_E_PROTOCOL_VIOLATION:
        return VT_REPL_E_PROTOCOL_VIOLATION;
    default: /* the producer codes: the replicas' states disagree */
        return VT_REPL_E_INVALID_REQUEST;
    }
}
