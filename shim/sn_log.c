/*
 * sn_log.c — formatting and writing libsn's messages (see sn_log.h).
 *
 * The per-thread recursion flag covers the one way logging could loop: a
 * message emitted while formatting another (a libc path that ends in a hook
 * that logs). Such a nested message is dropped rather than risk re-entry.
 */
#include "shim/sn_log.h"

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
    char buf[1024];
    static const char prefix[] = "libsn: ";
    memcpy(buf, prefix, sizeof prefix - 1);
    size_t off = sizeof prefix - 1;
    if (level == SN_LOG_ERROR) {
        memcpy(buf + off, "error: ", 7);
        off += 7;
    }
    int n = vsnprintf(buf + off, sizeof buf - off - 1, fmt, ap);
    if (n < 0)
        n = 0;
    if ((size_t)n > sizeof buf - off - 2)
        n = (int)(sizeof buf - off - 2);
    off += (size_t)n;
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
