/* libFuzzer target: the strict manifest parser on untrusted text. Whatever
 * it accepts must re-encode to exactly the same bytes (canonical form). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vt_manifest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vt_manifest m;
    char msg[256];
    msg[0] = '\0';
    int rc = vt_manifest_parse((const char *)data, size, &m, msg, sizeof(msg));
    if (rc != 0) {
        if (msg[0] == '\0' || m.producers != NULL || m.chunk_sha256 != NULL)
            abort();
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    if (vt_manifest_encode(&m, &text, &len, msg, sizeof(msg)) != 0)
        abort();
    if (len != size || memcmp(text, data, size) != 0)
        abort();
    uint8_t root[VT_SHA256_BYTES];
    vt_merkle_root((const uint8_t(*)[VT_SHA256_BYTES])m.chunk_sha256, m.chunk_count, root);
    free(text);
    vt_manifest_free(&m);
    return 0;
}
