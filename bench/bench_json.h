/* A tiny pretty-printing JSON writer shared by the vtop-bench subcommands:
 * nested objects of numbers, strings and booleans, written to a FILE. */
#ifndef VT_BENCH_JSON_H
#define VT_BENCH_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct vt_bj {
    FILE *f;
    int depth;
    bool need_comma;
};

void vt_bj_quoted(FILE *f, const char *s);
void vt_bj_key(struct vt_bj *j, const char *key);
/* Opens an object (key NULL at the top level). */
void vt_bj_open(struct vt_bj *j, const char *key);
void vt_bj_close(struct vt_bj *j);
/* `prec` digits after the point; non-finite values become null. */
void vt_bj_num(struct vt_bj *j, const char *key, double v, int prec);
void vt_bj_u64(struct vt_bj *j, const char *key, uint64_t v);
void vt_bj_str(struct vt_bj *j, const char *key, const char *v);
void vt_bj_bool(struct vt_bj *j, const char *key, bool v);

/* The `--format text|json` of every subcommand (`--json` is its alias):
 * json prints only the final JSON object, text (the default) the progress
 * lines and the summary. argv[*i] is "--format": takes its value, sets
 * *json_only and returns 0, or prints "PROG: --format ..." and returns 2. */
int vt_bench_format_arg(const char *prog, int argc, char **argv, int *i, bool *json_only);

#endif
