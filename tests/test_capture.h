/*
 * test_capture.h — capturing what a piece of libsn writes on stderr, for the
 * cmocka tests that hold its messages and reports: f(ctx) runs with file
 * descriptor 2 redirected into a pipe, whose contents end up in buf. The
 * output must fit the pipe (64 KiB), since it is read after f returns.
 */
#ifndef SN_TEST_CAPTURE_H
#define SN_TEST_CAPTURE_H

#include <stddef.h>
#include <unistd.h>

/* Returns the bytes captured; buf is NUL-terminated. */
static inline size_t capture_stderr(void (*f)(void *), void *ctx, char *buf, size_t cap)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    int saved = dup(2);
    dup2(fds[1], 2);
    close(fds[1]);
    f(ctx);
    dup2(saved, 2);
    close(saved);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < cap && (r = read(fds[0], buf + n, cap - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = 0;
    close(fds[0]);
    return n;
}

#endif
