/* chaos/check-history: reads the history files of a chaos run (the lines
 * `vtopctl produce|consume --history` and the harness write; format in
 * ctl/ctl_history.h and docs/CHAOS.md) and reports every anomaly with the
 * records that show it:
 *   lost          an acknowledged offset never read while a higher offset was
 *   inconsistent  one offset seen with two digests (acks and reads)
 *   duplicate     one digest (key and value) at two offsets
 *   nonmonotonic  a session read an offset at or below one it read before
 *   above_hwm     a session read an offset at or above the HWM it last saw
 *   unseen        with a `heal` line: an acknowledged offset not read after it
 * Files are read in the order given; `heal` applies to the lines after it.
 *
 * Usage: check-history [--max-events N] [--max-report N] FILE...
 * Exit: 0 no anomaly, 1 anomalies, 2 usage or an unreadable/malformed file.
 * The last line is always `verdict: OK ...` or `verdict: FAIL ...`. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CH_DEFAULT_MAX_EVENTS 8000000u
#define CH_DEFAULT_MAX_REPORT 20u
#define CH_MAX_FILES 256u
#define CH_LINE_BYTES 512u

enum ch_kind { CH_ACK = 0, CH_READ = 1 };
enum ch_anomaly { A_LOST, A_INCONSISTENT, A_DUPLICATE, A_NONMONO, A_ABOVE_HWM, A_UNSEEN, A_COUNT };

static const char *const anomaly_names[A_COUNT] = {"lost",         "inconsistent", "duplicate",
                                                   "nonmonotonic", "above_hwm",    "unseen"};

/* One acknowledged or read record. */
struct ch_event {
    uint64_t offset;
    uint64_t digest;
    uint32_t file;
    uint32_t line;
    uint8_t kind;
    uint8_t after_heal;
};

/* Where a session stands (reset by `open`). */
struct ch_session {
    bool have_read, have_hwm;
    uint64_t last_read, hwm;
    uint32_t last_line, hwm_line;
};

struct ch_state {
    const char *files[CH_MAX_FILES];
    uint32_t n_files;
    struct ch_event *ev;
    size_t n_ev, cap_ev, max_ev;
    uint64_t acks, reads, sessions;
    bool healed;
    uint64_t count[A_COUNT];
    uint64_t max_report;
};

/* Prints one anomaly (up to --max-report of each kind) and counts it. */
static void __attribute__((format(printf, 3, 4)))
report(struct ch_state *st, enum ch_anomaly a, const char *fmt, ...)
{
    if (st->count[a]++ >= st->max_report) {
        if (st->count[a] == st->max_report + 1)
            printf("%s: more (only the first %" PRIu64 " are shown)\n", anomaly_names[a],
                   st->max_report);
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    printf("%s: ", anomaly_names[a]);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

static int
push_event(struct ch_state *st, const struct ch_event *e)
{
    if (st->n_ev == st->cap_ev) {
        if (st->n_ev >= st->max_ev) {
            fprintf(stderr, "check-history: more than %zu events (raise --max-events)\n",
                    st->max_ev);
            return -ENOBUFS;
        }
        size_t cap = st->cap_ev ? st->cap_ev * 2 : 4096;
        if (cap > st->max_ev)
            cap = st->max_ev;
        struct ch_event *n = realloc(st->ev, cap * sizeof(*n));
        if (n == NULL) {
            fprintf(stderr, "check-history: out of memory\n");
            return -ENOMEM;
        }
        st->ev = n;
        st->cap_ev = cap;
    }
    st->ev[st->n_ev++] = *e;
    return 0;
}

/* Parses "N" fields of decimal or (hex = true) 16-digit hex numbers. */
static bool
parse_u64(const char *s, bool hex, uint64_t *out)
{
    if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    if (errno != 0 || *end != '\0' || (hex && strlen(s) != 16))
        return false;
    *out = (uint64_t)v;
    return true;
}

static const char *
where(const struct ch_state *st, uint32_t file)
{
    return st->files[file];
}

static void
on_read(struct ch_state *st, struct ch_session *s, const struct ch_event *e)
{
    if (s->have_read && e->offset <= s->last_read)
        report(st, A_NONMONO, "%s:%" PRIu32 " read %" PRIu64 " after read %" PRIu64
               " (line %" PRIu32 ") in the same session",
               where(st, e->file), e->line, e->offset, s->last_read, s->last_line);
    if (s->have_hwm && e->offset >= s->hwm)
        report(st, A_ABOVE_HWM, "%s:%" PRIu32 " read %" PRIu64 " at or above hwm %" PRIu64
               " (line %" PRIu32 ")",
               where(st, e->file), e->line, e->offset, s->hwm, s->hwm_line);
    s->have_read = true;
    s->last_read = e->offset;
    s->last_line = e->line;
}

/* One line; 0 or -EBADMSG (with a message). */
static int
parse_line(struct ch_state *st, struct ch_session *s, char *line, uint32_t file, uint32_t lineno)
{
    char *f[5] = {0};
    int n = 0;
    line += strspn(line, " \t");
    if (line[0] == '#')
        return 0;
    for (char *tok = strtok(line, " \t\r\n"); tok != NULL; tok = strtok(NULL, " \t\r\n")) {
        if (n == 5)
            goto bad;
        f[n++] = tok;
    }
    if (n == 0)
        return 0;
    struct ch_event e = {.file = file, .line = lineno, .after_heal = st->healed};
    if (strcmp(f[0], "open") == 0) {
        *s = (struct ch_session){0};
        st->sessions++;
        return 0;
    }
    if (strcmp(f[0], "heal") == 0 && n == 1) {
        st->healed = true;
        return 0;
    }
    if ((strcmp(f[0], "send") == 0 && n == 3) || strcmp(f[0], "end") == 0)
        return 0; /* attempts and session ends claim nothing */
    if (strcmp(f[0], "hwm") == 0 && n == 2) {
        if (!parse_u64(f[1], false, &s->hwm))
            goto bad;
        s->have_hwm = true;
        s->hwm_line = lineno;
        return 0;
    }
    uint64_t seq;
    if (strcmp(f[0], "ack") == 0 && n == 4 && parse_u64(f[1], false, &seq) &&
        parse_u64(f[2], false, &e.offset) && parse_u64(f[3], true, &e.digest)) {
        e.kind = CH_ACK;
        st->acks++;
        return push_event(st, &e);
    }
    if (strcmp(f[0], "read") == 0 && n == 3 && parse_u64(f[1], false, &e.offset) &&
        parse_u64(f[2], true, &e.digest)) {
        e.kind = CH_READ;
        st->reads++;
        on_read(st, s, &e);
        return push_event(st, &e);
    }
bad:
    fprintf(stderr, "check-history: %s:%" PRIu32 ": not a history line\n", st->files[file],
            lineno);
    return -EBADMSG;
}

static int
read_file(struct ch_state *st, uint32_t file)
{
    FILE *fp = fopen(st->files[file], "r");
    if (fp == NULL) {
        fprintf(stderr, "check-history: %s: %s\n", st->files[file], strerror(errno));
        return -errno;
    }
    struct ch_session s = {0};
    char line[CH_LINE_BYTES];
    uint32_t lineno = 0;
    int rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), fp) != NULL) {
        lineno++;
        size_t len = strlen(line);
        if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
            fprintf(stderr, "check-history: %s:%" PRIu32 ": line too long\n", st->files[file],
                    lineno);
            rc = -EBADMSG;
            break;
        }
        rc = parse_line(st, &s, line, file, lineno);
    }
    if (rc == 0 && ferror(fp)) {
        fprintf(stderr, "check-history: %s: read error\n", st->files[file]);
        rc = -EIO;
    }
    fclose(fp);
    return rc;
}

static int
by_offset(const void *a, const void *b)
{
    const struct ch_event *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    if (x->digest != y->digest)
        return x->digest < y->digest ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

static int
by_digest(const void *a, const void *b)
{
    const struct ch_event *x = a, *y = b;
    if (x->digest != y->digest)
        return x->digest < y->digest ? -1 : 1;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

static const char *
kind_name(const struct ch_event *e)
{
    return e->kind == CH_ACK ? "ack" : "read";
}

/* Sorted by digest: a digest at more than one offset. */
static void
check_duplicates(struct ch_state *st)
{
    qsort(st->ev, st->n_ev, sizeof(*st->ev), by_digest);
    for (size_t i = 0; i < st->n_ev;) {
        size_t j = i + 1;
        while (j < st->n_ev && st->ev[j].digest == st->ev[i].digest)
            j++;
        const struct ch_event *a = &st->ev[i], *b = &st->ev[j - 1];
        if (a->offset != b->offset)
            report(st, A_DUPLICATE, "digest %016" PRIx64 " at offset %" PRIu64 " (%s %s:%" PRIu32
                   ") and at offset %" PRIu64 " (%s %s:%" PRIu32 ")",
                   a->digest, a->offset, kind_name(a), where(st, a->file), a->line, b->offset,
                   kind_name(b), where(st, b->file), b->line);
        i = j;
    }
}

/* Sorted by offset: an offset with two digests; acked offsets never read
 * below the highest read one; acked offsets not read after the heal. */
static void
check_offsets(struct ch_state *st)
{
    qsort(st->ev, st->n_ev, sizeof(*st->ev), by_offset);
    bool any_read = false;
    uint64_t max_read = 0;
    for (size_t i = 0; i < st->n_ev; i++) {
        if (st->ev[i].kind == CH_READ) {
            any_read = true;
            if (st->ev[i].offset > max_read)
                max_read = st->ev[i].offset;
        }
    }
    for (size_t i = 0; i < st->n_ev;) {
        size_t j = i + 1;
        while (j < st->n_ev && st->ev[j].offset == st->ev[i].offset)
            j++;
        const struct ch_event *a = &st->ev[i], *b = &st->ev[j - 1], *ack = NULL;
        bool read = false, read_healed = false;
        for (size_t k = i; k < j; k++) {
            if (st->ev[k].kind == CH_ACK && ack == NULL)
                ack = &st->ev[k];
            if (st->ev[k].kind == CH_READ) {
                read = true;
                read_healed |= st->ev[k].after_heal != 0;
            }
        }
        if (a->digest != b->digest)
            report(st, A_INCONSISTENT, "offset %" PRIu64 " has digest %016" PRIx64 " (%s %s:%"
                   PRIu32 ") and digest %016" PRIx64 " (%s %s:%" PRIu32 ")",
                   a->offset, a->digest, kind_name(a), where(st, a->file), a->line, b->digest,
                   kind_name(b), where(st, b->file), b->line);
        if (ack != NULL && !read && any_read && ack->offset < max_read)
            report(st, A_LOST, "offset %" PRIu64 " digest %016" PRIx64 " acked (%s:%" PRIu32
                   ") and never read, while offsets up to %" PRIu64 " were read",
                   ack->offset, ack->digest, where(st, ack->file), ack->line, max_read);
        if (ack != NULL && st->healed && !read_healed)
            report(st, A_UNSEEN, "offset %" PRIu64 " digest %016" PRIx64 " acked (%s:%" PRIu32
                   ") and not read after the heal",
                   ack->offset, ack->digest, where(st, ack->file), ack->line);
        i = j;
    }
}

static int
usage(void)
{
    fputs("usage: check-history [--max-events N] [--max-report N] FILE...\n", stderr);
    return 2;
}

int
main(int argc, char **argv)
{
    static struct ch_state st;
    st.max_ev = CH_DEFAULT_MAX_EVENTS;
    st.max_report = CH_DEFAULT_MAX_REPORT;
    for (int i = 1; i < argc; i++) {
        uint64_t v;
        if ((strcmp(argv[i], "--max-events") == 0 || strcmp(argv[i], "--max-report") == 0) &&
            i + 1 < argc && parse_u64(argv[i + 1], false, &v) && v > 0) {
            if (argv[i][6] == 'e')
                st.max_ev = (size_t)v;
            else
                st.max_report = v;
            i++;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            return usage();
        } else if (st.n_files == CH_MAX_FILES) {
            fprintf(stderr, "check-history: at most %u files\n", CH_MAX_FILES);
            return 2;
        } else {
            st.files[st.n_files++] = argv[i];
        }
    }
    if (st.n_files == 0)
        return usage();
    for (uint32_t f = 0; f < st.n_files; f++) {
        if (read_file(&st, f) != 0) {
            free(st.ev);
            return 2;
        }
    }
    check_duplicates(&st);
    check_offsets(&st);
    free(st.ev);
    uint64_t total = 0;
    for (int a = 0; a < A_COUNT; a++)
        total += st.count[a];
    printf("verdict: %s acks=%" PRIu64 " reads=%" PRIu64 " sessions=%" PRIu64 " heal=%s",
           total == 0 ? "OK" : "FAIL", st.acks, st.reads, st.sessions, st.healed ? "yes" : "no");
    for (int a = 0; a < A_COUNT; a++)
        printf(" %s=%" PRIu64, anomaly_names[a], st.count[a]);
    putchar('\n');
    return total == 0 ? 0 : 1;
}
