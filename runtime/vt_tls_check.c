/* Boot-time inspection of a TLS identity's files (see vt_tls_check.h):
 * BoringSSL reads the PEM files, matches the key, verifies the chain against
 * the CA file at a given time and reads the subject CN with the same rule
 * peers apply (vt_tls__cert_cn). Owns nothing beyond one call. */
#include "vt_tls_check.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "vt_tls_int.h"

static const char *const file_what[] = {
    [VT_TLS_FILE_CA] = "CA file",
    [VT_TLS_FILE_CERT] = "certificate file",
    [VT_TLS_FILE_KEY] = "key file",
};

const char *
vt_tls_check_fault_name(enum vt_tls_check_fault f)
{
    static const char *const names[VT_TLS_FAULT_COUNT] = {
        [VT_TLS_FAULT_NONE] = "none",
        [VT_TLS_FAULT_MISSING] = "missing",
        [VT_TLS_FAULT_NOT_FILE] = "not_file",
        [VT_TLS_FAULT_UNREADABLE] = "unreadable",
        [VT_TLS_FAULT_NOT_PEM] = "not_pem",
        [VT_TLS_FAULT_KEY_MISMATCH] = "key_mismatch",
        [VT_TLS_FAULT_UNKNOWN_CA] = "unknown_ca",
        [VT_TLS_FAULT_EXPIRED] = "expired",
        [VT_TLS_FAULT_NOT_YET_VALID] = "not_yet_valid",
        [VT_TLS_FAULT_BAD_CERT] = "bad_cert",
        [VT_TLS_FAULT_BAD_CN] = "bad_cn",
        [VT_TLS_FAULT_WRONG_CN] = "wrong_cn",
    };
    if ((unsigned)f >= VT_TLS_FAULT_COUNT)
        return "unknown";
    return names[f];
}

static int
fault(struct vt_tls_check *out, enum vt_tls_check_fault f, enum vt_tls_check_file file, int rc,
      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
fault(struct vt_tls_check *out, enum vt_tls_check_fault f, enum vt_tls_check_file file, int rc,
      const char *fmt, ...)
{
    va_list ap;
    out->fault = f;
    out->file = file;
    va_start(ap, fmt);
    vsnprintf(out->why, sizeof(out->why), fmt, ap);
    va_end(ap);
    ERR_clear_error();
    return rc;
}

/* Exists, is a regular file and opens for reading. */
static int
check_path(const char *path, enum vt_tls_check_file which, struct vt_tls_check *out)
{
    const char *what = file_what[which];
    struct stat st;

    if (path == NULL || path[0] == '\0')
        return fault(out, VT_TLS_FAULT_MISSING, which, -ENOENT, "%s is not set", what);
    if (stat(path, &st) != 0) {
        int e = errno;
        if (e == ENOENT || e == ENOTDIR)
            return fault(out, VT_TLS_FAULT_MISSING, which, -ENOENT, "%s %s does not exist (%s)",
                         what, path, strerror(e));
        return fault(out, VT_TLS_FAULT_UNREADABLE, which, -e, "%s %s: %s", what, path,
                     strerror(e));
    }
    if (!S_ISREG(st.st_mode))
        return fault(out, VT_TLS_FAULT_NOT_FILE, which, -EINVAL, "%s %s is not a regular file%s",
                     what, path, S_ISDIR(st.st_mode) ? " (it is a directory)" : "");
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        int e = errno;
        return fault(out, VT_TLS_FAULT_UNREADABLE, which, -e, "%s %s cannot be read: %s", what,
                     path, strerror(e));
    }
    close(fd);
    return 0;
}

/* The time `t` as ASN1_TIME_print writes it ("Jan  2 00:00:00 2020 GMT"). */
static void
time_text(const ASN1_TIME *t, char *buf, size_t len)
{
    BIO *b = BIO_new(BIO_s_mem());
    const uint8_t *data = NULL;
    size_t n = 0;

    snprintf(buf, len, "?");
    if (b != NULL && t != NULL && ASN1_TIME_print(b, t) == 1 && BIO_mem_contents(b, &data, &n))
        snprintf(buf, len, "%.*s", (int)n, (const char *)data);
    BIO_free(b);
}

/* Every certificate of `path`, in order: the first into *first (if first != NULL), the others
 * (all of them when first == NULL) into the store or the stack. Returns how many were read. */
static int
read_certs(const char *path, X509 **first, X509_STORE *store, STACK_OF(X509) *rest)
{
    BIO *bio = BIO_new_file(path, "r");
    int count = 0;
    X509 *x;

    if (bio == NULL)
        return 0;
    while ((x = PEM_read_bio_X509(bio, NULL, NULL, NULL)) != NULL) {
        if (count == 0 && first != NULL) {
            *first = x;
        } else if (store != NULL) {
            if (X509_STORE_add_cert(store, x) != 1)
                ERR_clear_error(); /* a duplicate CA certificate is harmless */
            X509_free(x);
        } else if (rest == NULL || sk_X509_push(rest, x) == 0) {
            X509_free(x);
        }
        count++;
    }
    ERR_clear_error(); /* the loop ends with "no start line" at the end of the file */
    BIO_free(bio);
    return count;
}

static EVP_PKEY *
read_key(const char *path)
{
    BIO *bio = BIO_new_file(path, "r");
    EVP_PKEY *key = bio ? PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL) : NULL;
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

/* The chain of `leaf` to the store at `now_s`: 0, or the fault. */
static int
verify_chain(const struct vt_tls_files *f, X509 *leaf, X509_STORE *store, STACK_OF(X509) *chain,
             int64_t now_s, struct vt_tls_check *out)
{
    X509_STORE_CTX *ctx = X509_STORE_CTX_new();
    if (ctx == NULL || X509_STORE_CTX_init(ctx, store, leaf, chain) != 1) {
        X509_STORE_CTX_free(ctx);
        return fault(out, VT_TLS_FAULT_BAD_CERT, VT_TLS_FILE_CERT, -ENOMEM,
                     "cannot set up certificate verification (out of memory)");
    }
    X509_VERIFY_PARAM_set_depth(X509_STORE_CTX_get0_param(ctx), 4); /* as vt_tls_ctx_new */
    if (now_s != 0)
        X509_STORE_CTX_set_time(ctx, 0, (time_t)now_s);
    if (X509_verify_cert(ctx) == 1) {
        X509_STORE_CTX_free(ctx);
        ERR_clear_error();
        return 0;
    }
    int e = X509_STORE_CTX_get_error(ctx);
    int depth = X509_STORE_CTX_get_error_depth(ctx);
    X509 *bad = X509_STORE_CTX_get_current_cert(ctx);
    char when[64], cn[VT_TLS_CN_MAX + 1] = "";
    enum vt_tls_check_file file = depth > 0 ? VT_TLS_FILE_CA : VT_TLS_FILE_CERT;
    const char *whose = depth > 0 ? "the CA certificate" : "certificate";
    const char *path = depth > 0 ? f->ca_file : f->cert_file;
    int rc;

    if (bad != NULL)
        (void)vt_tls__cert_cn(bad, cn, sizeof(cn));
    if (e == X509_V_ERR_CERT_HAS_EXPIRED) {
        time_text(bad ? X509_get0_notAfter(bad) : NULL, when, sizeof(when));
        rc = fault(out, VT_TLS_FAULT_EXPIRED, file, -EINVAL, "%s %s (CN \"%s\") expired at %s",
                   whose, path, cn, when);
    } else if (e == X509_V_ERR_CERT_NOT_YET_VALID) {
        time_text(bad ? X509_get0_notBefore(bad) : NULL, when, sizeof(when));
        rc = fault(out, VT_TLS_FAULT_NOT_YET_VALID, file, -EINVAL,
                   "%s %s (CN \"%s\") is not valid before %s", whose, path, cn, when);
    } else if (vt_tls__classify_x509(e) == VT_TLS_REFUSAL_UNKNOWN_CA) {
        rc = fault(out, VT_TLS_FAULT_UNKNOWN_CA, VT_TLS_FILE_CERT, -EINVAL,
                   "certificate %s (CN \"%s\") is not signed by the CA in %s (%s)", f->cert_file,
                   out->cn, f->ca_file, X509_verify_cert_error_string(e));
    } else {
        rc = fault(out, VT_TLS_FAULT_BAD_CERT, file, -EINVAL,
                   "%s %s (CN \"%s\") does not verify against %s: %s", whose, path, cn,
                   f->ca_file, X509_verify_cert_error_string(e));
    }
    X509_STORE_CTX_free(ctx);
    return rc;
}

/* The leaf's CN by the peers' rule, then against the expected identity. */
static int
check_cn(const struct vt_tls_files *f, X509 *leaf, const char *expected_cn,
         struct vt_tls_check *out)
{
    int rc = vt_tls__cert_cn(leaf, out->cn, sizeof(out->cn));
    if (rc == -ENOENT)
        return fault(out, VT_TLS_FAULT_BAD_CN, VT_TLS_FILE_CERT, -EINVAL,
                     "certificate %s has no subject CN", f->cert_file);
    if (rc == -EEXIST)
        return fault(out, VT_TLS_FAULT_BAD_CN, VT_TLS_FILE_CERT, -EINVAL,
                     "certificate %s has several subject CNs", f->cert_file);
    if (rc != 0 || !vt_tls_cn_valid(out->cn))
        return fault(out, VT_TLS_FAULT_BAD_CN, VT_TLS_FILE_CERT, -EINVAL,
                     "certificate %s has CN \"%s\", which is not a UUID or a decimal id",
                     f->cert_file, out->cn);
    if (expected_cn != NULL && strcasecmp(out->cn, expected_cn) != 0)
        return fault(out, VT_TLS_FAULT_WRONG_CN, VT_TLS_FILE_CERT, -EINVAL,
                     "certificate %s has CN \"%s\", expected \"%s\"", f->cert_file, out->cn,
                     expected_cn);
    return 0;
}

int
vt_tls_check_files(const struct vt_tls_files *f, const char *expected_cn, int64_t now_s,
                   struct vt_tls_check *out)
{
    X509_STORE *store = NULL;
    STACK_OF(X509) *chain = NULL;
    X509 *leaf = NULL;
    EVP_PKEY *key = NULL;
    int rc;

    VT_ASSERT(f != NULL && out != NULL);
    memset(out, 0, sizeof(*out));
    ERR_clear_error();
    if ((rc = check_path(f->ca_file, VT_TLS_FILE_CA, out)) != 0 ||
        (rc = check_path(f->cert_file, VT_TLS_FILE_CERT, out)) != 0 ||
        (rc = check_path(f->key_file, VT_TLS_FILE_KEY, out)) != 0)
        return rc;
    store = X509_STORE_new();
    chain = sk_X509_new_null();
    if (store == NULL || chain == NULL) {
        rc = fault(out, VT_TLS_FAULT_BAD_CERT, VT_TLS_FILE_CA, -ENOMEM, "out of memory");
        goto done;
    }
    if (read_certs(f->ca_file, NULL, store, NULL) == 0) {
        rc = fault(out, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_CA, -EINVAL,
                   "CA file %s holds no PEM certificate", f->ca_file);
        goto done;
    }
    if (read_certs(f->cert_file, &leaf, NULL, chain) == 0 || leaf == NULL) {
        rc = fault(out, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_CERT, -EINVAL,
                   "certificate file %s holds no PEM certificate", f->cert_file);
        goto done;
    }
    (void)vt_tls__cert_cn(leaf, out->cn, sizeof(out->cn));
    key = read_key(f->key_file);
    if (key == NULL) {
        rc = fault(out, VT_TLS_FAULT_NOT_PEM, VT_TLS_FILE_KEY, -EINVAL,
                   "key file %s holds no PEM private key", f->key_file);
        goto done;
    }
    if (X509_check_private_key(leaf, key) != 1) {
        rc = fault(out, VT_TLS_FAULT_KEY_MISMATCH, VT_TLS_FILE_KEY, -EINVAL,
                   "private key %s is not the key of the certificate in %s", f->key_file,
                   f->cert_file);
        goto done;
    }
    rc = verify_chain(f, leaf, store, chain, now_s, out);
    if (rc == 0)
        rc = check_cn(f, leaf, expected_cn, out);
done:
    EVP_PKEY_free(key);
    X509_free(leaf);
    sk_X509_pop_free(chain, X509_free);
    X509_STORE_free(store);
    ERR_clear_error();
    return rc;
}
