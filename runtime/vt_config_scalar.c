/* Config scalars: text -> value parsers behind vt_config's loader (plain decimal,
 * sizes with binary units, durations, UUIDs, host:port). Pure functions; no state. */
#include "vt_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

static bool
cfg_all_digits(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return len > 0;
}

int
vt_cfg_parse_u64(const char *s, size_t len, uint64_t *out)
{
    uint64_t v = 0;

    VT_ASSERT(s || len == 0);
    VT_ASSERT(out);
    if (!cfg_all_digits(s, len) || (len > 1 && s[0] == '0'))
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -ERANGE;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

struct cfg_unit {
    const char *name;
    uint64_t mult;
};

static const struct cfg_unit cfg_size_units[] = {
    {"", 1}, {"B", 1}, {"KiB", 1ull << 10}, {"MiB", 1ull << 20}, {"GiB", 1ull << 30},
    {"TiB", 1ull << 40}, {NULL, 0},
};
static const struct cfg_unit cfg_duration_units[] = {
    {"", 1}, {"ms", 1}, {"s", 1000}, {"m", 60000}, {"h", 3600000}, {NULL, 0},
};

#define CFG_NOT_A_NUMBER "not a non-negative decimal integer with an optional unit"

static int
cfg_scaled_fail(const char **why, const char *problem, int rc)
{
    *why = problem;
    return rc;
}

/* "<decimal>[ ]*<unit>": 0, or -EINVAL / -ERANGE with *why set. */
static int
cfg_parse_scaled(const char *s, size_t len, const struct cfg_unit *units, uint64_t *out,
                 const char **why)
{
    size_t i = 0, j;
    uint64_t v;

    *why = NULL;
    while (i < len && s[i] >= '0' && s[i] <= '9')
        i++;
    int rc = vt_cfg_parse_u64(s, i, &v);
    if (rc == -ERANGE)
        return cfg_scaled_fail(why, "does not fit in 64 bits", -ERANGE);
    if (rc)
        return cfg_scaled_fail(why, CFG_NOT_A_NUMBER, -EINVAL);
    for (j = i; j < len && s[j] == ' ';)
        j++;
    if (j > i && j == len)
        return cfg_scaled_fail(why, "trailing spaces", -EINVAL);
    for (const struct cfg_unit *u = units; u->name; u++) {
        if (strlen(u->name) != len - j || memcmp(u->name, s + j, len - j) != 0)
            continue;
        if (v > UINT64_MAX / u->mult)
            return cfg_scaled_fail(why, "does not fit in 64 bits", -ERANGE);
        *out = v * u->mult;
        return 0;
    }
    if (s[j] >= '0' && s[j] <= '9')
        *why = "unexpected space inside the number";
    else if ((s[j] >= 'a' && s[j] <= 'z') || (s[j] >= 'A' && s[j] <= 'Z'))
        *why = "unknown unit";
    else
        *why = CFG_NOT_A_NUMBER;
    return -EINVAL;
}

int
vt_cfg_parse_size(const char *text, size_t len, uint64_t *bytes, const char **why)
{
    const char *ignored;
    VT_ASSERT((text || len == 0) && bytes);
    return cfg_parse_scaled(text, len, cfg_size_units, bytes, why ? why : &ignored);
}

int
vt_cfg_parse_duration_ms(const char *text, size_t len, uint64_t *ms, const char **why)
{
    const char *ignored;
    VT_ASSERT((text || len == 0) && ms);
    return cfg_parse_scaled(text, len, cfg_duration_units, ms, why ? why : &ignored);
}

static int
cfg_hex_value(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

int
vt_cfg_parse_uuid(const char *text, size_t len, uint8_t uuid[16])
{
    uint8_t tmp[16];
    size_t o = 0;

    VT_ASSERT((text || len == 0) && uuid);
    if (len != 36)
        return -EINVAL;
    for (size_t i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (text[i++] != '-')
                return -EINVAL;
            continue;
        }
        /* Every hex group has an even length, so a pair never straddles a hyphen. */
        int hi = cfg_hex_value(text[i]), lo = cfg_hex_value(text[i + 1]);
        if (hi < 0 || lo < 0)
            return -EINVAL;
        tmp[o++] = (uint8_t)(hi << 4 | lo);
        i += 2;
    }
    VT_ASSERT(o == 16);
    memcpy(uuid, tmp, 16);
    return 0;
}

static const char *
cfg_check_hostname(const char *h, size_t len)
{
    if (len == 0)
        return "empty host";
    if (len > 253)
        return "host longer than 253 bytes";
    for (size_t i = 0; i < len; i++) {
        char ch = h[i];
        bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                  (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_';
        if (ch == ':')
            return "IPv6 addresses must be in brackets, e.g. [::1]:8080";
        if (!ok)
            return "invalid character in host (allowed: letters, digits, '-', '.', '_')";
    }
    return NULL;
}

static const char *
cfg_check_ipv6(const char *h, size_t len)
{
    char tmp[64];
    struct in6_addr addr;

    if (len == 0)
        return "empty host";
    if (len >= sizeof(tmp))
        return "invalid IPv6 address";
    memcpy(tmp, h, len);
    tmp[len] = '\0';
    return inet_pton(AF_INET6, tmp, &addr) == 1 ? NULL : "invalid IPv6 address";
}

/* Returns NULL or why `s` is not "host:port" / "[v6]:port". */
static const char *
cfg_parse_hostport(const char *s, size_t len, struct vt_cfg_hostport *hp)
{
    if (len == 0)
        return "empty";
    const char *host, *port, *why;
    size_t host_len;
    uint64_t p;

    if (len > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', len);
        if (!close)
            return "missing ']'";
        host = s + 1;
        host_len = (size_t)(close - host);
        if (close + 1 == s + len || close[1] != ':')
            return "missing ':port' after ']'";
        port = close + 2;
        why = cfg_check_ipv6(host, host_len);
    } else {
        const char *colon = memrchr(s, ':', len);
        if (!colon)
            return "missing ':port'";
        host = s;
        host_len = (size_t)(colon - s);
        port = colon + 1;
        why = cfg_check_hostname(host, host_len);
    }
    if (why)
        return why;
    size_t port_len = (size_t)(s + len - port);
    if (port_len == 0)
        return "empty port";
    if (vt_cfg_parse_u64(port, port_len, &p) != 0 || p > 65535)
        return "port is not a decimal number in 0..65535";
    memset(hp, 0, sizeof(*hp));
    memcpy(hp->host, host, host_len);
    hp->port = (uint16_t)p;
    return NULL;
}

int
vt_cfg_parse_hostport(const char *text, size_t len, struct vt_cfg_hostport *hp, const char **why)
{
    struct vt_cfg_hostport tmp;
    const char *problem;

    VT_ASSERT((text || len == 0) && hp);
    problem = cfg_parse_hostport(text, len, &tmp);
    if (why)
        *why = problem;
    if (problem)
        return -EINVAL;
    *hp = tmp;
    return 0;
}
