/* The shared vtop-bench JSON writer (see bench_json.h). */
#include "bench_json.h"

#include <math.h>
#include <string.h>

#include "vt_assert.h"

void
vt_bj_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void
vt_bj_key(struct vt_bj *j, const char *key)
{
    fprintf(j->f, "%s\n%*s", j->need_comma ? "," : "", j->depth * 2, "");
    vt_bj_quoted(j->f, key);
    fputs(": ", j->f);
    j->need_comma = true;
}

void
vt_bj_open(struct vt_bj *j, const char *key)
{
    if (key != NULL)
        vt_bj_key(j, key);
    fputc('{', j->f);
    j->depth++;
    j->need_comma = false;
}

void
vt_bj_close(struct vt_bj *j)
{
    VT_ASSERT(j->depth > 0);
    j->depth--;
    fprintf(j->f, "\n%*s}", j->depth * 2, "");
    j->need_comma = true;
    if (j->depth == 0)
        fputc('\n', j->f);
}

/* `prec` digits after the point; non-finite values become null. */
void
vt_bj_num(struct vt_bj *j, const char *key, double v, int prec)
{
    vt_bj_key(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.*f", prec, v);
    else
        fputs("null", j->f);
}

void
vt_bj_u64(struct vt_bj *j, const char *key, uint64_t v)
{
    vt_bj_key(j, key);
    fprintf(j->f, "%llu", (unsigned long long)v);
}

void
vt_bj_str(struct vt_bj *j, const char *key, const char *v)
{
    vt_bj_key(j, key);
    vt_bj_quoted(j->f, v);
}

void
vt_bj_bool(struct vt_bj *j, const char *key, bool v)
{
    vt_bj_key(j, key);
    fputs(v ? "true" : "false", j->f);
}


int
vt_bench_format_arg(const char *prog, int argc, char **argv, int *i, bool *json_only)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "%s: --format needs a value (text or json)\n", prog);
        return 2;
    }
    const char *v = argv[++*i];
    if (strcmp(v, "json") == 0 || strcmp(v, "text") == 0) {
        *json_only = v[0] == 'j';
        return 0;
    }
    fprintf(stderr, "%s: --format: '%s' is not text or json\n", prog, v);
    return 2;
}
