/*
 * child_signal.h — runs a test body that is expected to abort (a broken
 * lock rule caught by the debug build's witness) in a forked child with
 * stderr silenced, and says which signal ended it. Included by cmocka
 * tests after <cmocka.h>.
 */
#ifndef SN_TESTS_CHILD_SIGNAL_H
#define SN_TESTS_CHILD_SIGNAL_H

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs f in a child with stderr silenced; returns the signal that ended it
 * (0 if it exited). */
static inline int child_signal(void (*f)(void))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0)
            dup2(null, 2);
        f();
        _exit(0);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

#endif
