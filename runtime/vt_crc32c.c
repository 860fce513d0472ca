/* CRC32C implementations: portable slicing-by-8 and SSE4.2 with three
 * interleaved streams. Owns the lookup tables and the stream-combining
 * constants, all computed once at first use (pthread_once).
 *
 * Notation. A CRC register value c represents a polynomial over GF(2) in
 * "reflected" order: bit 31 is the coefficient of x^0 and bit 0 that of
 * x^31. P is x^32 + the polynomial whose reflected bits are 0x82F63B78.
 * The raw register update over data D is linear:
 *   raw(c, D) = c * x^(8|D|) mod P  xor  raw(0, D)
 * so a buffer split into three blocks A, B, C of n bytes each can be run as
 * three independent streams (c0 = raw(c, A), c1 = raw(0, B), c2 = raw(0, C))
 * and combined as c0 * x^(16n) xor c1 * x^(8n) xor c2 (mod P).
 *
 * Multiplying by x^(8n) mod P in hardware: PCLMULQDQ of two reflected
 * 32-bit values gives their 63-bit product shifted up by one degree (bit m
 * holds x^(62-m), read as 64-bit data it is prod * x), and the crc32
 * instruction on 64-bit data d with a zero register yields d * x^32 mod P.
 * So crc32_u64(0, clmul(c, K)) == c * K * x^33 mod P, and with
 * K = x^(8n-33) mod P that is exactly the shift by n zero bytes. */
#include "vt_crc32c.h"

#include <nmmintrin.h>
#include <pthread.h>
#include <wmmintrin.h>

#include "vt_assert.h"

#define VT_CRC32C_POLY 0x82F63B78u

/* Block sizes (bytes per stream) for the three-stream path, largest first.
 * Each combine costs ~15 cycles, so big blocks amortise it; the smaller
 * tiers mop up what is left before the single-stream tail. */
static const size_t vt_crc32c_block_bytes[] = {8192, 1024, 128};
#define VT_CRC32C_TIERS 3
_Static_assert(VT_ARRAY_LEN(vt_crc32c_block_bytes) == VT_CRC32C_TIERS, "tier count");

/* immutable after vt_crc32c_init (pthread_once) */
static uint32_t vt_crc32c_table[8][256];
static uint64_t vt_crc32c_shift1[VT_CRC32C_TIERS]; /* K for a shift by n bytes */
static uint64_t vt_crc32c_shift2[VT_CRC32C_TIERS]; /* K for a shift by 2n bytes */
static bool vt_crc32c_have_hw;
static pthread_once_t vt_crc32c_once = PTHREAD_ONCE_INIT;

/* ---- GF(2) arithmetic modulo P, reflected representation -------------- */

static uint32_t
vt_crc32c_mulx(uint32_t a)
{
    return (a >> 1) ^ ((a & 1u) ? VT_CRC32C_POLY : 0u);
}

static uint32_t
vt_crc32c_mulmod(uint32_t a, uint32_t b)
{
    uint32_t prod = 0;
    for (int i = 0; i < 32; i++) {
        if (a & (0x80000000u >> i))
            prod ^= b;
        b = vt_crc32c_mulx(b);
    }
    return prod;
}

/* x^n mod P, by square-and-multiply. */
static uint32_t
vt_crc32c_xpow(uint64_t n)
{
    uint32_t result = 0x80000000u; /* x^0 */
    uint32_t base = 0x40000000u;   /* x^1 */
    while (n != 0) {
        if (n & 1u)
            result = vt_crc32c_mulmod(result, base);
        base = vt_crc32c_mulmod(base, base);
        n >>= 1;
    }
    return result;
}

static void
vt_crc32c_init(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int i = 0; i < 8; i++)
            c = vt_crc32c_mulx(c);
        vt_crc32c_table[0][b] = c;
    }
    for (int k = 1; k < 8; k++) {
        for (uint32_t b = 0; b < 256; b++) {
            uint32_t prev = vt_crc32c_table[k - 1][b];
            vt_crc32c_table[k][b] = (prev >> 8) ^ vt_crc32c_table[0][prev & 0xffu];
        }
    }
    for (int t = 0; t < VT_CRC32C_TIERS; t++) {
        uint64_t bits = 8u * (uint64_t)vt_crc32c_block_bytes[t];
        VT_ASSERT(vt_crc32c_block_bytes[t] % 16 == 0); /* hw_three unrolls by 16 */
        vt_crc32c_shift1[t] = vt_crc32c_xpow(bits - 33);
        vt_crc32c_shift2[t] = vt_crc32c_xpow(2 * bits - 33);
    }
    __builtin_cpu_init();
    vt_crc32c_have_hw = __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
}

static inline void
vt_crc32c_ensure_init(void)
{
    int rc = pthread_once(&vt_crc32c_once, vt_crc32c_init);
    VT_ASSERT(rc == 0);
}

static inline uint64_t
vt_crc32c_load_le64(const uint8_t *p)
{
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24 |
           (uint64_t)p[4] << 32 | (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
           (uint64_t)p[7] << 56;
}

/* ---- portable ----------------------------------------------------------- */

uint32_t
vt_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    const uint32_t(*t)[256] = (const uint32_t(*)[256])vt_crc32c_table;
    uint32_t c = ~crc;

    VT_ASSERT(p != NULL || len == 0);
    vt_crc32c_ensure_init();
    while (len >= 8) {
        uint64_t w = vt_crc32c_load_le64(p) ^ c;
        c = t[7][w & 0xff] ^ t[6][(w >> 8) & 0xff] ^ t[5][(w >> 16) & 0xff] ^
            t[4][(w >> 24) & 0xff] ^ t[3][(w >> 32) & 0xff] ^ t[2][(w >> 40) & 0xff] ^
            t[1][(w >> 48) & 0xff] ^ t[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len-- > 0)
        c = (c >> 8) ^ t[0][(c ^ *p++) & 0xffu];
    return ~c;
}

/* ---- SSE4.2 ------------------------------------------------------------- */

/* One stream: bytes until p is 8-aligned, then 8 bytes at a time. */
static uint32_t
vt_crc32c_hw_one(uint32_t c, const uint8_t *p, size_t len)
{
    uint64_t c64;

    while (len > 0 && ((uintptr_t)p & 7u) != 0) {
        c = _mm_crc32_u8(c, *p++);
        len--;
    }
    c64 = c;
    while (len >= 8) {
        c64 = _mm_crc32_u64(c64, vt_crc32c_load_le64(p));
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len-- > 0)
        c = _mm_crc32_u8(c, *p++);
    return c;
}

/* Three streams over p[0..3n): returns raw(c, p[0..3n)). */
static uint32_t
vt_crc32c_hw_three(uint32_t c, const uint8_t *p, size_t n, int tier)
{
    uint64_t c0 = c, c1 = 0, c2 = 0;
    const uint8_t *end = p + n;

    for (; p < end; p += 16) {
        c0 = _mm_crc32_u64(c0, vt_crc32c_load_le64(p));
        c1 = _mm_crc32_u64(c1, vt_crc32c_load_le64(p + n));
        c2 = _mm_crc32_u64(c2, vt_crc32c_load_le64(p + 2 * n));
        c0 = _mm_crc32_u64(c0, vt_crc32c_load_le64(p + 8));
        c1 = _mm_crc32_u64(c1, vt_crc32c_load_le64(p + n + 8));
        c2 = _mm_crc32_u64(c2, vt_crc32c_load_le64(p + 2 * n + 8));
    }
    __m128i a = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c0),
                                     _mm_cvtsi64_si128((long long)vt_crc32c_shift2[tier]), 0x00);
    __m128i b = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)c1),
                                     _mm_cvtsi64_si128((long long)vt_crc32c_shift1[tier]), 0x00);
    uint64_t d = (uint64_t)_mm_cvtsi128_si64(_mm_xor_si128(a, b));
    return (uint32_t)_mm_crc32_u64(0, d) ^ (uint32_t)c2;
}

uint32_t
vt_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    uint32_t c = ~crc;

    VT_ASSERT(p != NULL || len == 0);
    vt_crc32c_ensure_init();
    if (len >= 3 * vt_crc32c_block_bytes[VT_CRC32C_TIERS - 1]) {
        size_t head = (8u - ((uintptr_t)p & 7u)) & 7u;
        c = vt_crc32c_hw_one(c, p, head);
        p += head;
        len -= head;
        for (int t = 0; t < VT_CRC32C_TIERS; t++) {
            size_t n = vt_crc32c_block_bytes[t];
            while (len >= 3 * n) {
                c = vt_crc32c_hw_three(c, p, n, t);
                p += 3 * n;
                len -= 3 * n;
            }
        }
    }
    return ~vt_crc32c_hw_one(c, p, len);
}

/* ---- dispatch ----------------------------------------------------------- */

bool
vt_crc32c_hw_available(void)
{
    vt_crc32c_ensure_init();
    return vt_crc32c_have_hw;
}

uint32_t
vt_crc32c(uint32_t crc, const void *buf, size_t len)
{
    vt_crc32c_ensure_init();
    if (VT_LIKELY(vt_crc32c_have_hw))
        return vt_crc32c_hw(crc, buf, len);
    return vt_crc32c_sw(crc, buf, len);
}
