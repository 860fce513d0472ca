/* TLS contexts (BoringSSL SSL_CTX, TLS 1.3 only, mutual certificates),
 * certificate identity (subject CN) extraction and validation, the peer
 * verification callback (chain errors + CN policy), error classification for
 * refusal reasons, and the reconnect backoff helper.
 * Owns: struct vt_tls_ctx. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "vt_diag.h"
#include "vt_tls.h"
#include "vt_tls_int.h"

/* immutable after creation; shared by all cores */
struct vt_tls_ctx {
    SSL_CTX *ssl_ctx;
    bool server;
    char cn[VT_TLS_CN_MAX + 1];
};

static pthread_once_t ex_once = PTHREAD_ONCE_INIT;
static int ex_index = -1; /* written once under ex_once, then read-only */

static void
ex_index_init(void)
{
    ex_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

int
vt_tls__ex_index(void)
{
    pthread_once(&ex_once, ex_index_init);
    VT_ASSERT(ex_index >= 0);
    return ex_index;
}

SSL_CTX *
vt_tls__ctx_ssl(const struct vt_tls_ctx *ctx)
{
    return ctx->ssl_ctx;
}

const char *
vt_tls_ctx_cn(const struct vt_tls_ctx *ctx)
{
    return ctx->cn;
}

bool
vt_tls_ctx_is_server(const struct vt_tls_ctx *ctx)
{
    return ctx->server;
}

/* ---- identity ---------------------------------------------------------- */

static bool
is_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

bool
vt_tls_cn_valid(const char *cn)
{
    if (cn == NULL)
        return false;
    size_t n = strlen(cn);
    if (n >= 1 && n <= 20 && strspn(cn, "0123456789") == n)
        return true;
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? cn[i] != '-' : !is_hex(cn[i]))
            return false;
    }
    return true;
}

int
vt_tls__cert_cn(X509 *cert, char *out, size_t out_len)
{
    VT_ASSERT(out != NULL && out_len > 0);
    out[0] = '\0';
    X509_NAME *name = X509_get_subject_name(cert);
    if (name == NULL)
        return -ENOENT;
    int idx = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
    if (idx < 0)
        return -ENOENT;
    int rc = 0;
    if (X509_NAME_get_index_by_NID(name, NID_commonName, idx) >= 0)
        rc = -EEXIST;
    const ASN1_STRING *s = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, idx));
    const unsigned char *p = ASN1_STRING_get0_data(s);
    size_t n = (size_t)ASN1_STRING_length(s);
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < out_len; i++) {
        bool printable = p[i] >= 0x20 && p[i] < 0x7f;
        out[k++] = printable ? (char)p[i] : '?';
        if (!printable && rc == 0)
            rc = -EINVAL;
    }
    out[k] = '\0';
    if (n > VT_TLS_CN_MAX && rc == 0)
        rc = -EINVAL;
    return rc;
}

/* ---- peer verification ------------------------------------------------- */

static bool
policy_allows(const struct vt_tls_policy *pol, const char *cn)
{
    if (pol->p.n_allowed == 0)
        return true;
    for (size_t i = 0; i < pol->p.n_allowed; i++)
        if (strcasecmp(pol->p.allowed_cns[i], cn) == 0)
            return true;
    return false;
}

/* The leaf passed chain verification: check its CN against the policy. */
int
vt_tls__check_cn(X509 *leaf, const char *expected_cn, char cn[VT_TLS_CN_MAX + 1])
{
    VT_ASSERT(leaf != NULL && cn != NULL);
    int rc = vt_tls__cert_cn(leaf, cn, VT_TLS_CN_MAX + 1);
    if (rc == -ENOENT || rc == -EEXIST)
        return rc;
    if (rc != 0 || !vt_tls_cn_valid(cn))
        return -EINVAL;
    if (expected_cn != NULL && expected_cn[0] != '\0' && strcasecmp(cn, expected_cn) != 0)
        return -EACCES;
    return 0;
}

static bool
conn_check_identity(struct vt_conn *c, X509 *leaf)
{
    char cn[VT_TLS_CN_MAX + 1];
    int rc = vt_tls__check_cn(leaf, c->expected_cn, cn);
    enum vt_tls_refusal ref = VT_TLS_REFUSAL_BAD_CN;
    if (rc == -ENOENT) {
        snprintf(c->reason, sizeof(c->reason), "peer certificate has no subject CN");
    } else if (rc == -EEXIST) {
        snprintf(c->reason, sizeof(c->reason), "peer certificate has several subject CNs");
    } else if (rc == -EINVAL) {
        snprintf(c->reason, sizeof(c->reason),
                 "peer certificate CN \"%s\" is not a UUID or decimal id", cn);
    } else if (rc == -EACCES) {
        ref = VT_TLS_REFUSAL_CN_NOT_ALLOWED;
        snprintf(c->reason, sizeof(c->reason), "peer presented CN \"%s\", expected \"%s\"", cn,
                 c->expected_cn);
    } else if (!policy_allows(c->pol, cn)) {
        ref = VT_TLS_REFUSAL_CN_NOT_ALLOWED;
        snprintf(c->reason, sizeof(c->reason), "peer CN \"%s\" is not in the allowlist", cn);
    } else {
        ref = VT_TLS_REFUSAL_NONE;
    }
    if (ref != VT_TLS_REFUSAL_NONE) {
        c->verify_refusal = ref;
        return false;
    }
    snprintf(c->peer_cn, sizeof(c->peer_cn), "%s", cn);
    return true;
}

int
vt_tls__verify_cb(int ok, X509_STORE_CTX *store)
{
    SSL *ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx());
    struct vt_conn *c = ssl != NULL ? SSL_get_ex_data(ssl, vt_tls__ex_index()) : NULL;
    if (c == NULL)
        return 0; /* not one of ours: refuse */
    int depth = X509_STORE_CTX_get_error_depth(store);
    X509 *cert = X509_STORE_CTX_get_current_cert(store);
    if (!ok) {
        if (c->verify_refusal == VT_TLS_REFUSAL_NONE) {
            int e = X509_STORE_CTX_get_error(store);
            char cn[VT_TLS_CN_MAX + 1] = "";
            if (cert != NULL)
                (void)vt_tls__cert_cn(cert, cn, sizeof(cn));
            c->verify_refusal = vt_tls__classify_x509(e);
            snprintf(c->reason, sizeof(c->reason), "peer certificate (CN \"%s\", depth %d): %s", cn,
                     depth, X509_verify_cert_error_string(e));
        }
        return 0;
    }
    if (depth != 0 || cert == NULL)
        return 1;
    if (conn_check_identity(c, cert))
        return 1;
    X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION);
    return 0;
}

/* ---- error classification ---------------------------------------------- */

const char *
vt_tls_refusal_name(enum vt_tls_refusal r)
{
    static const char *const names[VT_TLS_REFUSAL_COUNT] = {
        [VT_TLS_REFUSAL_NONE] = "none",
        [VT_TLS_REFUSAL_HANDSHAKE] = "handshake",
        [VT_TLS_REFUSAL_PLAINTEXT] = "plaintext",
        [VT_TLS_REFUSAL_NO_CERT] = "no_cert",
        [VT_TLS_REFUSAL_UNKNOWN_CA] = "unknown_ca",
        [VT_TLS_REFUSAL_EXPIRED] = "expired",
        [VT_TLS_REFUSAL_BAD_CERT] = "bad_cert",
        [VT_TLS_REFUSAL_BAD_CN] = "bad_cn",
        [VT_TLS_REFUSAL_CN_NOT_ALLOWED] = "cn_not_allowed",
        [VT_TLS_REFUSAL_BY_PEER] = "by_peer",
        [VT_TLS_REFUSAL_TIMEOUT] = "timeout",
        [VT_TLS_REFUSAL_OVER_LIMIT] = "over_limit",
        [VT_TLS_REFUSAL_CONNECT] = "connect",
    };
    if ((unsigned)r >= VT_TLS_REFUSAL_COUNT)
        return "unknown";
    return names[r];
}

enum vt_tls_refusal
vt_tls__classify_x509(int x509_err)
{
    switch (x509_err) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return VT_TLS_REFUSAL_EXPIRED;
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
        return VT_TLS_REFUSAL_UNKNOWN_CA;
    default:
        return VT_TLS_REFUSAL_BAD_CERT;
    }
}

static void
err_text(uint32_t e, char *buf, size_t len)
{
    const char *lib = ERR_lib_error_string(e);
    const char *reason = ERR_reason_error_string(e);
    if (reason != NULL)
        snprintf(buf, len, "%s: %s", lib ? lib : "?", reason);
    else
        snprintf(buf, len, "error 0x%08x", (unsigned)e);
}

/* Alerts a peer sends when it does not accept our certificate or identity. */
static bool
alert_refuses(int alert)
{
    switch (alert) {
    case SSL_AD_HANDSHAKE_FAILURE:
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
    case SSL_AD_CERTIFICATE_REQUIRED:
        return true;
    default:
        return false;
    }
}

int
vt_tls__err_alert(uint32_t e)
{
    if (e == 0 || ERR_GET_LIB(e) != ERR_LIB_SSL)
        return -1;
    int reason = ERR_GET_REASON(e);
    return reason >= SSL_AD_REASON_OFFSET ? reason - SSL_AD_REASON_OFFSET : -1;
}

enum vt_tls_refusal
vt_tls__classify_code(uint32_t e)
{
    if (e == 0 || ERR_GET_LIB(e) != ERR_LIB_SSL)
        return VT_TLS_REFUSAL_HANDSHAKE;
    switch (ERR_GET_REASON(e)) {
    case SSL_R_HTTP_REQUEST:
    case SSL_R_HTTPS_PROXY_REQUEST:
    case SSL_R_WRONG_VERSION_NUMBER:
        return VT_TLS_REFUSAL_PLAINTEXT;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        return VT_TLS_REFUSAL_NO_CERT;
    default:
        break;
    }
    int alert = vt_tls__err_alert(e);
    if (alert >= 0 && alert != SSL_AD_CLOSE_NOTIFY && alert_refuses(alert))
        return VT_TLS_REFUSAL_BY_PEER;
    return VT_TLS_REFUSAL_HANDSHAKE;
}

enum vt_tls_refusal
vt_tls__classify_err(char *buf, size_t len)
{
    uint32_t e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) {
        snprintf(buf, len, "no TLS error recorded");
        return VT_TLS_REFUSAL_HANDSHAKE;
    }
    err_text(e, buf, len);
    int alert = vt_tls__err_alert(e);
    if (alert >= 0 && alert != SSL_AD_CLOSE_NOTIFY)
        snprintf(buf, len, "peer sent TLS alert: %s", SSL_alert_desc_string_long(alert));
    return vt_tls__classify_code(e);
}

/* ---- contexts ---------------------------------------------------------- */

static void
pop_err(char *buf, size_t len)
{
    uint32_t e = ERR_get_error(); /* the oldest is the most specific */
    ERR_clear_error();
    if (e == 0)
        snprintf(buf, len, "unknown error");
    else
        err_text(e, buf, len);
}

/* A readable regular file, or a specific error naming it. */
static int
check_file(const char *what, const char *path, char *err, size_t err_len)
{
    if (path == NULL || path[0] == '\0') {
        snprintf(err, err_len, "%s is not set", what);
        return -EINVAL;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        int e = errno;
        snprintf(err, err_len, "%s %s: %s", what, path, strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, err_len, "%s %s: not a regular file", what, path);
        return -EINVAL;
    }
    return 0;
}

static EVP_PKEY *
read_key(const char *path, char *err, size_t err_len)
{
    BIO *bio = BIO_new_file(path, "r");
    if (bio == NULL) {
        char why[160];
        pop_err(why, sizeof(why));
        snprintf(err, err_len, "key_file %s: cannot open (%s)", path, why);
        return NULL;
    }
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (key == NULL) {
        char why[160];
        pop_err(why, sizeof(why));
        snprintf(err, err_len, "key_file %s: not a PEM private key (%s)", path, why);
    }
    return key;
}

static int
load_identity(struct vt_tls_ctx *t, const struct vt_tls_files *f, char *err, size_t err_len)
{
    char why[160];
    if (SSL_CTX_load_verify_locations(t->ssl_ctx, f->ca_file, NULL) != 1) {
        pop_err(why, sizeof(why));
        snprintf(err, err_len, "ca_file %s: no valid PEM CA certificate (%s)", f->ca_file, why);
        return -EINVAL;
    }
    if (SSL_CTX_use_certificate_chain_file(t->ssl_ctx, f->cert_file) != 1) {
        pop_err(why, sizeof(why));
        snprintf(err, err_len, "cert_file %s: no valid PEM certificate (%s)", f->cert_file, why);
        return -EINVAL;
    }
    EVP_PKEY *key = read_key(f->key_file, err, err_len);
    if (key == NULL)
        return -EINVAL;
    int ok = SSL_CTX_use_PrivateKey(t->ssl_ctx, key);
    EVP_PKEY_free(key);
    if (ok != 1 || SSL_CTX_check_private_key(t->ssl_ctx) != 1) {
        pop_err(why, sizeof(why));
        snprintf(err, err_len, "key_file %s does not match the certificate in cert_file %s (%s)",
                 f->key_file, f->cert_file, why);
        return -EINVAL;
    }
    X509 *own = SSL_CTX_get0_certificate(t->ssl_ctx);
    VT_ASSERT(own != NULL);
    int rc = vt_tls__cert_cn(own, t->cn, sizeof(t->cn));
    if (rc != 0 || !vt_tls_cn_valid(t->cn))
        VT_WARN("cert_file %s: subject CN \"%s\" is not a UUID or decimal id; peers will refuse "
                "this certificate",
                f->cert_file, t->cn);
    return 0;
}

static int
configure(struct vt_tls_ctx *t, char *err, size_t err_len)
{
    SSL_CTX *s = t->ssl_ctx;
    if (SSL_CTX_set_min_proto_version(s, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(s, TLS1_3_VERSION) != 1) {
        snprintf(err, err_len, "cannot restrict the context to TLS 1.3");
        return -EINVAL;
    }
    int mode = SSL_VERIFY_PEER;
    if (t->server)
        mode |= SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    SSL_CTX_set_verify(s, mode, vt_tls__verify_cb);
    SSL_CTX_set_verify_depth(s, 4);
    /* Identity is the certificate on every connection: no resumption. */
    SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_OFF);
    if (t->server && SSL_CTX_set_num_tickets(s, 0) != 1) {
        snprintf(err, err_len, "cannot disable session tickets");
        return -EINVAL;
    }
    SSL_CTX_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    return 0;
}

struct vt_tls_ctx *
vt_tls_ctx_new(const struct vt_tls_files *files, bool server, char *err, size_t err_len)
{
    VT_ASSERT(files != NULL && err != NULL && err_len > 0);
    err[0] = '\0';
    (void)vt_tls__ex_index();
    if (check_file("ca_file", files->ca_file, err, err_len) != 0 ||
        check_file("cert_file", files->cert_file, err, err_len) != 0 ||
        check_file("key_file", files->key_file, err, err_len) != 0)
        return NULL;
    struct vt_tls_ctx *t = calloc(1, sizeof(*t));
    if (t == NULL) {
        snprintf(err, err_len, "out of memory");
        return NULL;
    }
    t->server = server;
    ERR_clear_error();
    t->ssl_ctx = SSL_CTX_new(TLS_method());
    if (t->ssl_ctx == NULL) {
        snprintf(err, err_len, "SSL_CTX_new failed");
        goto fail;
    }
    if (configure(t, err, err_len) != 0 || load_identity(t, files, err, err_len) != 0)
        goto fail;
    return t;
fail:
    ERR_clear_error();
    vt_tls_ctx_free(t);
    return NULL;
}

void
vt_tls_ctx_free(struct vt_tls_ctx *ctx)
{
    if (ctx == NULL)
        return;
    SSL_CTX_free(ctx->ssl_ctx);
    free(ctx);
}

/* ---- backoff ----------------------------------------------------------- */

static uint64_t
splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void
vt_backoff_init(struct vt_backoff *b, uint64_t base_ms, uint64_t max_ms, uint64_t seed)
{
    VT_ASSERT(b != NULL && base_ms > 0 && max_ms >= base_ms);
    b->base_ms = base_ms;
    b->max_ms = max_ms;
    b->cur_ms = base_ms;
    b->rng = seed;
}

uint64_t
vt_backoff_next_ms(struct vt_backoff *b)
{
    uint64_t cap = b->cur_ms;
    uint64_t delay = splitmix64(&b->rng) % (cap + 1);
    b->cur_ms = cap > b->max_ms / 2 ? b->max_ms : cap * 2;
    return delay;
}

void
vt_backoff_reset(struct vt_backoff *b)
{
    b->cur_ms = b->base_ms;
}
