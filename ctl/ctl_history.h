/* The history a chaos run records (`vtopctl produce|consume --history FILE`,
 * read by chaos/check-history; docs/CHAOS.md, "History format").
 *
 * One line per event, appended to FILE (created if missing), fields
 * separated by one space, offsets and sequences decimal, digests 16 hex
 * digits:
 *   open produce|consume PID   a new session (a run of the tool) starts
 *   send SEQ COUNT             produce: a batch of COUNT records from
 *                              sequence SEQ was sent (an attempt; resends
 *                              repeat it)
 *   ack SEQ OFFSET DIGEST      produce: record SEQ acknowledged at OFFSET
 *   hwm H                      consume: the node reported high-water mark H
 *                              (the reads after it must be below it)
 *   read OFFSET DIGEST         consume: the record at OFFSET was read
 *   end STATUS                 the session ended (its exit status word)
 *   heal                       written by the harness: the faults are
 *                              healed; reads after it are the final reads
 * The digest is FNV-1a 64 over the key length (4 bytes, little-endian),
 * the key and the value, so a record's identity is its key and value.
 *
 * Lines are buffered and written (one write(2) per flush) after every
 * acknowledged batch (produce) or stdout flush (consume): a SIGKILLed tool
 * loses at most its last unflushed events, which only weakens the check
 * (an event not recorded claims nothing). Blocking file I/O: tools only. */
#ifndef VT_CTL_HISTORY_H
#define VT_CTL_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "vt_assert.h"

#define CTL_HISTORY_BUF_BYTES 65536u

struct ctl_history {
    int fd; /* -1: no history */
    size_t len;
    int failed; /* a write failed: its errno (reported once, then ignored) */
    char buf[CTL_HISTORY_BUF_BYTES];
};

/* Opens `path` for appending (NULL: no history, every call a no-op) and
 * writes the `open TOOL PID` line. 0, or a negative errno with err. */
int ctl_history_open(struct ctl_history *h, const char *path, const char *tool, char *err,
                     size_t err_len) VT_MUST_USE;
/* Appends one line (the format without its newline). */
void ctl_history_line(struct ctl_history *h, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Writes the buffered lines. */
void ctl_history_flush(struct ctl_history *h);
/* Writes `end STATUS`, flushes and closes. */
void ctl_history_close(struct ctl_history *h, const char *status);

uint64_t ctl_history_digest(const uint8_t *key, uint32_t key_len, const uint8_t *value,
                            uint32_t value_len);

#endif
