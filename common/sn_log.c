/*
 * sn_log.c — formatting and writing libsn's messages (see sn_log.h).
 *
 * The per-thread recursion flag covers the one way logging could loop: a
 * message emitted while formatting another (a libc path that ends in a hook
 * that logs). Such a nested message is dropped rather than risk re-entry.
 */
#include "common/sn_log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int sn_log_level = SN_LOG_WARN;

static __thread int sn_log_busy __attribute__((tls_model("initial-exec")));
static unsigned long sn_log_warnings;
static unsigned long sn_log_dropped;

void sn_log_write_raw(const char *buf, unsigned long len)
{
    while (len > 0) {
        ssize_t n = write(2, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return;
        }
        buf += n;
        len -= (unsigned long)n;
    }
}

/* Length of the valid, printable UTF-8 sequence at p (at most n bytes), or
 * 0: C1 controls (U+0080..U+009F) count as unprintable, because some
 * terminals act on them as on ESC sequences. */
static size_t sn_utf8_printable(const unsigned char *p, size_t n)
{
    unsigned c = p[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
    if (c >= 0xc2 && c <= 0xdf)
        len = 2;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4;
    else
        return 0;
    if (c == 0xc2)
        lo = 0xa0;
    else if (c == 0xe0)
        lo = 0xa0; /* overlong */
    else if (c == 0xed)
        hi = 0x9f; /* surrogates */
    else if (c == 0xf0)
        lo = 0x90; /* overlong */
    else if (c == 0xf4)
        hi = 0x8f; /* past U+10FFFF */
    if (n < len || p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    return len;
}

size_t sn_log_escape(const char *in, size_t n, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = (const unsigned char *)in;
    size_t o = 0;
    if (cap == 0)
        return 0;
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        char esc[4];
        const char *src = esc;
        size_t k, take = 1;
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            esc[0] = (char)c;
            k = 1;
        } else if (c >= 0x80 && (k = sn_utf8_printable(p + i, n - i)) > 0) {
            src = in + i;
            take = k;
        } else {
            esc[0] = '\\';
            k = 2;
            switch (c) {
            case '\n': esc[1] = 'n'; break;
            case '\t': esc[1] = 't'; break;
            case '\r': esc[1] = 'r'; break;
            case '\\': esc[1] = '\\'; break;
            default:
                esc[1] = 'x';
                esc[2] = hex[c >> 4];
                esc[3] = hex[c & 15];
                k = 4;
            }
        }
        if (o + k >= cap)
            break; /* never half an escape or half a character */
        memcpy(out + o, src, k);
        o += k;
        i += take;
    }
    out[o] = 0;
    return o;
}

void sn_log_vemit(int level, const char *fmt, va_list ap)
{
    if (sn_log_busy)
        return;
    sn_log_busy = 1;
    int saved_errno = errno;
    if (level == SN_LOG_WARN) {
        unsigned long n = __atomic_add_fetch(&sn_log_warnings, 1, __ATOMIC_RELAXED);
        if (n > SN_LOG_WARN_CAP) {
            __atomic_add_fetch(&sn_log_dropped, 1, __ATOMIC_RELAXED);
            if (n == SN_LOG_WARN_CAP + 1) {
                static const char cap[] = "libsn: too many warnings; further ones are not shown\n";
                sn_log_write_raw(cap, sizeof cap - 1);
            }
            errno = saved_errno;
            sn_log_busy = 0;
            return;
        }
    }
    /* The formatted text may carry anything a value or a path held (an SN_*
     * variable, a file name): escaping it keeps one message on one line and
     * keeps terminal escapes from acting. */
    char text[1024];
    int n = vsnprintf(text, sizeof text, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof text)
        n = (int)(sizeof text - 1);
    char buf[2048];
    static const char prefix[] = "libsn: ";
    memcpy(buf, prefix, sizeof prefix - 1);
    size_t off = sizeof prefix - 1;
    if (level == SN_LOG_ERROR) {
        memcpy(buf + off, "error: ", 7);
        off += 7;
    }
    off += sn_log_escape(text, (size_t)n, buf + off, sizeof buf - off - 1);
    buf[off++] = '\n';
    sn_log_write_raw(buf, off);
    errno = saved_errno;
    sn_log_busy = 0;
}

void sn_log_emit(int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sn_log_vemit(level, fmt, ap);
    va_end(ap);
}

unsigned long sn_log_suppressed(void)
{
    return __atomic_load_n(&sn_log_dropped, __ATOMIC_RELAXED);
}

void sn_log_reset_cap(void)
{
    __atomic_store_n(&sn_log_warnings, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&sn_log_dropped, 0, __ATOMIC_RELAXED);
}
