/* CRC32C (Castagnoli): the checksum of every wire frame, record batch and
 * on-disk header. Owns the portable slicing-by-8 tables and the SSE4.2
 * three-stream path; both are built once, on first use, by code in
 * vt_crc32c.c.
 *
 * Parameters: reflected polynomial 0x82F63B78, initial value ~0, final
 * xor ~0 (the iSCSI / RFC 3720 CRC). "123456789" -> 0xE3069283.
 *
 * Streaming: the `crc` argument is a previous result (0 to start), so
 *   vt_crc32c(vt_crc32c(0, a, n), b, m) == CRC of a || b.
 *
 * All functions are pure, thread-safe, never block and never allocate. */
#ifndef VT_CRC32C_H
#define VT_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The CRC of buf[0..len) continued from `crc`. Uses the hardware path when
 * the CPU has SSE4.2 and PCLMULQDQ (decided once), else the portable one.
 * `buf` may be NULL only when len == 0. */
uint32_t vt_crc32c(uint32_t crc, const void *buf, size_t len);

/* Portable slicing-by-8 implementation (same contract as vt_crc32c). */
uint32_t vt_crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* SSE4.2 crc32 + PCLMULQDQ implementation (same contract as vt_crc32c).
 * Only call it when vt_crc32c_hw_available() is true: on other CPUs it
 * would fault with an illegal instruction. */
uint32_t vt_crc32c_hw(uint32_t crc, const void *buf, size_t len);

/* True when the CPU supports both SSE4.2 and PCLMULQDQ. */
bool vt_crc32c_hw_available(void);

#endif
