/* Boot-time inspection of a TLS identity's files (CA, certificate, key)
 * before anything starts: each file exists, is a readable regular PEM file,
 * the key is the certificate's, the certificate chains to the CA, is inside
 * its validity period and carries the expected CN. The first problem found
 * comes back as a specific fault, the file it is about and a sentence, so a
 * config check can point at the key that names that file. Owns nothing. */
#ifndef VT_TLS_CHECK_H
#define VT_TLS_CHECK_H

#include <stdint.h>

#include "vt_assert.h"
#include "vt_tls.h"

enum vt_tls_check_fault {
    VT_TLS_FAULT_NONE = 0,
    VT_TLS_FAULT_MISSING,       /* no such file (or a directory on the way is missing) */
    VT_TLS_FAULT_NOT_FILE,      /* exists but is not a regular file */
    VT_TLS_FAULT_UNREADABLE,    /* cannot be opened for reading */
    VT_TLS_FAULT_NOT_PEM,       /* holds no PEM certificate / private key */
    VT_TLS_FAULT_KEY_MISMATCH,  /* the key is not the certificate's */
    VT_TLS_FAULT_UNKNOWN_CA,    /* the certificate does not chain to the CA file */
    VT_TLS_FAULT_EXPIRED,       /* past notAfter (of the leaf or of a CA on the chain) */
    VT_TLS_FAULT_NOT_YET_VALID, /* before notBefore */
    VT_TLS_FAULT_BAD_CERT,      /* any other chain verification failure */
    VT_TLS_FAULT_BAD_CN,        /* CN missing, repeated, or not a UUID / decimal id */
    VT_TLS_FAULT_WRONG_CN,      /* a valid CN, but not the expected identity */
    VT_TLS_FAULT_COUNT
};

/* Which of the three files a fault is about. */
enum vt_tls_check_file { VT_TLS_FILE_CA = 0, VT_TLS_FILE_CERT, VT_TLS_FILE_KEY };

struct vt_tls_check {
    enum vt_tls_check_fault fault;
    enum vt_tls_check_file file;
    char cn[VT_TLS_CN_MAX + 1]; /* the certificate's subject CN once it was read ("" before) */
    char why[400];              /* "certificate /c/n1.pem (CN \"1\") expired at Jan  2 ..." */
};

/* Checks `files` in this order: each file exists, is regular and readable; the CA file holds
 * at least one PEM certificate, the certificate file a PEM certificate (chain), the key file
 * a PEM private key; the key matches the certificate; the certificate chains to the CA and
 * every certificate on the chain is valid at `now_s` (UNIX seconds; 0 = the current time);
 * the subject CN is one UUID or decimal id and, when `expected_cn` is not NULL, equals it
 * (ignoring case, as peers compare it). Returns 0 with out->fault NONE, -ENOENT (MISSING),
 * -EACCES (UNREADABLE), -ENOMEM, or -EINVAL for every other fault; out is always filled.
 * Blocks on file reads: main thread at boot, or tools; never a reactor. */
int vt_tls_check_files(const struct vt_tls_files *files, const char *expected_cn, int64_t now_s,
                       struct vt_tls_check *out) VT_MUST_USE;

/* Stable lower-case name, e.g. "wrong_cn". */
const char *vt_tls_check_fault_name(enum vt_tls_check_fault f);

#endif
