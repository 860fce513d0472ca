/* The checks of a loaded vtop-node config that need the environment (see
 * vt_node_config_check in vt_node_config.h): the log variables, every tls
 * block's files and identity, the data directories, and the warnings about
 * empty authorization lists. --check-config and start-up both run exactly
 * this, before anything starts. Owns nothing. */
#include "vt_node_config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "vt_codec.h"
#include "vt_diag.h"
#include "vt_tls_check.h"

static int
check_env(const struct vt_node_config *cfg, struct vt_cfg_error *err)
{
    char why[300];
    if (vt_diag_env_check(why, sizeof(why)) == 0)
        return 0;
    memset(err, 0, sizeof(*err));
    snprintf(err->file, sizeof(err->file), "%s", cfg->lines.file);
    snprintf(err->msg, sizeof(err->msg), "%.250s; it overrides log.level / log.format of %.200s",
             why, cfg->lines.file);
    return -EINVAL;
}

/* One tls block: `prefix` is "tls" or "meta.tls"; `expected_cn` NULL = any valid CN, with
 * `who` / `who_key` saying where the expected identity comes from. */
static int
check_tls(const struct vt_node_config *cfg, const struct vt_cfg_tls *t, const char *prefix,
          const char *expected_cn, const char *who_key, const char *who, int64_t now_s,
          struct vt_cfg_error *err)
{
    static const char *const file_key[] = {
        [VT_TLS_FILE_CA] = "ca", [VT_TLS_FILE_CERT] = "cert", [VT_TLS_FILE_KEY] = "key"};
    struct vt_tls_files files = vt_cfg_tls_files(t);
    struct vt_tls_check r;
    char key[32];

    if (vt_tls_check_files(&files, expected_cn, now_s, &r) == 0)
        return 0;
    snprintf(key, sizeof(key), "%s.%s", prefix, file_key[r.file]);
    if (r.fault == VT_TLS_FAULT_WRONG_CN)
        return vt_cfg_lines_fail(&cfg->lines, err, key,
                                 "certificate %s has CN \"%s\", but %s (line %u) is %s: %s",
                                 t->cert, r.cn, who_key,
                                 vt_cfg_lines_nearest(&cfg->lines, who_key), expected_cn, who);
    return vt_cfg_lines_fail(&cfg->lines, err, key, "%s", r.why);
}

/* The identity each tls block must carry: the data role (native, replication) is node_uuid,
 * the meta role the decimal meta.id; a block serving both cannot be right. */
static int
check_identities(const struct vt_node_config *cfg, int64_t now_s, struct vt_cfg_error *err)
{
    bool data = cfg->has_native || cfg->has_replication;
    bool meta_top = cfg->has_meta && !cfg->meta.has_tls;
    char uuid[37], id[24];
    int rc = 0;

    vt_uuid_format(cfg->node_uuid, uuid);
    snprintf(id, sizeof(id), "%" PRIu64, cfg->meta.id);
    if (data && meta_top)
        return vt_cfg_lines_fail(&cfg->lines, err, "meta",
                                 "the top-level tls block would serve the data role (CN = "
                                 "node_uuid %s) and the meta role (CN = meta.id %s) at once: "
                                 "give meta its own meta.tls", uuid, id);
    if (cfg->has_tls) {
        if (data || (!meta_top && cfg->has_node_uuid))
            rc = check_tls(cfg, &cfg->tls, "tls", uuid, "node_uuid",
                           "clients and peers check this node's certificate against node_uuid",
                           now_s, err);
        else if (meta_top)
            rc = check_tls(cfg, &cfg->tls, "tls", id, "meta.id",
                           "the meta planes' certificate CN must be meta.id in decimal", now_s,
                           err);
        else
            rc = check_tls(cfg, &cfg->tls, "tls", NULL, "", "", now_s, err);
    }
    if (rc == 0 && cfg->has_meta && cfg->meta.has_tls)
        rc = check_tls(cfg, &cfg->meta.tls, "meta.tls", id, "meta.id",
                       "the meta planes' certificate CN must be meta.id in decimal", now_s, err);
    return rc;
}

static int
check_dir(const struct vt_node_config *cfg, const char *dir, const char *key,
          const struct vt_node_check_env *env, struct vt_cfg_error *err)
{
    char why[600];
    uint64_t need = cfg->limits.max_segment_bytes;
    int rc = vt_file_dir_check(dir, need, env ? env->free_bytes : NULL, NULL, why, sizeof(why));
    if (rc == 0)
        return 0;
    if (rc == -ENOSPC)
        return vt_cfg_lines_fail(&cfg->lines, err, key, "%s for one segment (limits.max_segment)",
                                 why);
    return vt_cfg_lines_fail(&cfg->lines, err, key, "%s", why);
}

static void
warn_add(struct vt_node_check_warnings *w, const struct vt_node_config *cfg, const char *key,
         const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
warn_add(struct vt_node_check_warnings *w, const struct vt_node_config *cfg, const char *key,
         const char *fmt, ...)
{
    struct vt_cfg_error e;
    char why[300];
    va_list ap;
    if (w == NULL || w->n == VT_NODE_CHECK_MAX_WARNINGS)
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    (void)vt_cfg_lines_fail(&cfg->lines, &e, key, "%s", why);
    snprintf(w->msg[w->n++], sizeof(w->msg[0]), "%s", e.msg);
}

/* A node that serves clients with an empty role list refuses that role to everyone. */
static void
warn_authz(const struct vt_node_config *cfg, struct vt_node_check_warnings *w)
{
    const struct vt_node_authz *a = &cfg->authz;
    const struct {
        uint32_t n;
        const char *key, *role, *what;
    } roles[] = {
        {a->n_producers, "authorization.producers", "producer", "Produce"},
        {a->n_consumers, "authorization.consumers", "consumer", "Fetch"},
        {a->n_admins, "authorization.admins", "admin", "NodeStatus"},
    };
    if (!cfg->has_native)
        return;
    for (size_t i = 0; i < VT_ARRAY_LEN(roles); i++)
        if (roles[i].n == 0)
            warn_add(w, cfg, roles[i].key, "%s the %s role is allowed to nobody: this node "
                     "refuses every client asking for it (%s)",
                     vt_cfg_lines_find(&cfg->lines, roles[i].key) ? "empty list:" : "not set:",
                     roles[i].role, roles[i].what);
}

int
vt_node_config_check(const struct vt_node_config *cfg, const struct vt_node_check_env *env,
                     struct vt_cfg_error *err, struct vt_node_check_warnings *warn)
{
    VT_ASSERT(cfg != NULL && err != NULL);
    memset(err, 0, sizeof(*err));
    if (warn != NULL)
        memset(warn, 0, sizeof(*warn));
    int64_t now_s = env ? env->now_s : 0;
    int rc = check_env(cfg, err);
    if (rc == 0)
        rc = check_identities(cfg, now_s, err);
    if (rc == 0)
        rc = check_dir(cfg, cfg->data_dir, "data_dir", env, err);
    if (rc == 0 && cfg->has_meta)
        rc = check_dir(cfg, cfg->meta.dir, "meta.dir", env, err);
    if (rc != 0)
        return -EINVAL;
    warn_authz(cfg, warn);
    return 0;
}
