/* libFuzzer target: record-batch validation (vt_batch_validate) on
 * untrusted bytes. A batch that validates must iterate cleanly, and its
 * records must exactly fill it. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "vt_batch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct vt_batch_hdr h;
    const char *why = NULL;
    /* Small limits so the fuzzer reaches the limit checks. */
    uint32_t max_batch = (size >= 1 && data[0] & 1) ? 4096 : (1u << 20);
    uint32_t max_record = (size >= 1 && data[0] & 2) ? 64 : (1u << 16);
    if (vt_batch_decode_header(data, size, max_batch, &h, &why) != 0)
        return 0;
    int rc = vt_batch_validate(data, size, max_batch, max_record, &h, &why);
    if (rc != 0) {
        if (why == NULL)
            abort();
        return 0;
    }
    if (h.batch_len > size || h.batch_len > max_batch)
        abort();
    struct vt_batch_iter it;
    struct vt_record r;
    uint64_t bytes = VT_BATCH_OVERHEAD_BYTES;
    uint32_t n = 0;
    vt_batch_iter_init(&it, data);
    while (vt_batch_iter_next(&it, &r) == 1) {
        if (r.key_len + (uint64_t)r.value_len > max_record)
            abort();
        if (r.timestamp_ms < h.first_timestamp_ms || r.timestamp_ms > h.last_timestamp_ms)
            abort();
        bytes += VT_BATCH_RECORD_OVERHEAD_BYTES + (uint64_t)r.key_len + r.value_len;
        n++;
    }
    if (n != h.record_count || bytes != h.batch_len)
        abort();
    (void)vt_batch_content_crc(data);
    return 0;
}
