/*
 * sn_log.h — libsn's one way of saying something.
 *
 * Every message goes to file descriptor 2 through write(2), formatted into a
 * stack buffer, prefixed "libsn: ". Logging must never call a function libsn
 * intercepts (it may run inside a wrapper, during initialisation, or inside
 * the dynamic loader's dlsym path), never allocate through the framework's
 * allocator hooks and never write to stdout, which belongs to the program.
 * Warnings are capped so that a misbehaving run cannot flood the terminal.
 *
 * A message is one line: the formatted text is escaped (sn_log_escape), so a
 * value taken from the environment or the file system cannot end the line,
 * start a forged "libsn:" line or send escape sequences to the terminal.
 */
#ifndef SN_LOG_H
#define SN_LOG_H

#include <stdarg.h>
#include <stddef.h>

enum sn_log_level { SN_LOG_ERROR = 0, SN_LOG_WARN = 1, SN_LOG_INFO = 2, SN_LOG_DEBUG = 3 };

/* Current threshold; messages above it are not formatted at all. */
extern int sn_log_level;

#define SN_LOG(level, ...)                                                     \
    do {                                                                       \
        if ((level) <= sn_log_level)                                           \
            sn_log_emit((level), __VA_ARGS__);                                 \
    } while (0)

#define sn_error(...) SN_LOG(SN_LOG_ERROR, __VA_ARGS__)
#define sn_warn(...) SN_LOG(SN_LOG_WARN, __VA_ARGS__)
#define sn_info(...) SN_LOG(SN_LOG_INFO, __VA_ARGS__)
#define sn_debug(...) SN_LOG(SN_LOG_DEBUG, __VA_ARGS__)

/* Warn at most once per call site (the flag is the site's own). */
#define sn_warn_once(...)                                                      \
    do {                                                                       \
        static int sn_warned_once__;                                           \
        if (!__atomic_exchange_n(&sn_warned_once__, 1, __ATOMIC_RELAXED))      \
            sn_warn(__VA_ARGS__);                                              \
    } while (0)

void sn_log_emit(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sn_log_vemit(int level, const char *fmt, va_list ap);

/* Copies n bytes of in to out (cap bytes, NUL-terminated) with every byte
 * that is not printable written as an escape: \n, \t, \r, \\ for a
 * backslash, \xNN for the other C0 controls, DEL and any byte >= 0x80 that
 * is not part of a valid UTF-8 character or is a C1 control (U+0080..U+009F).
 * Valid printable UTF-8 is kept, so file names in any script stay readable.
 * Stops before an escape or character that would not fit; returns the
 * length written. */
size_t sn_log_escape(const char *in, size_t n, char *out, size_t cap);

/* Writes all of buf to fd 2, retrying on EINTR; no prefix, no cap. */
void sn_log_write_raw(const char *buf, unsigned long len);

/* Maximum number of warnings printed in one run; later ones are counted. */
#define SN_LOG_WARN_CAP 64
unsigned long sn_log_suppressed(void);
/* For tests: forget how many warnings were printed. */
void sn_log_reset_cap(void);

#endif
