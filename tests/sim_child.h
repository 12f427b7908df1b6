/*
 * sim_child.h — run a test body in a fresh process with its own SIMGPU_*
 * environment. The simulated device reads its configuration once, at first
 * use, so tests that need a different device (capacity, profile, compute off,
 * VMM off, several devices) or that must observe a fault re-execute the test
 * binary with "--child NAME": main() hands that to sim_child_main(), which
 * runs the named body and exits with its verdict.
 */
#ifndef SN_TESTS_SIM_CHILD_H
#define SN_TESTS_SIM_CHILD_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct sim_child_body { const char *name; int (*fn)(void); };

/* env: NULL-terminated "NAME=value" list. Returns the raw wait status. */
static inline int sim_child_run(const char *const *env, const char *name)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        for (const char *const *e = env; e && *e; e++)
            putenv((char *)*e);
        execl("/proc/self/exe", "/proc/self/exe", "--child", name, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

/* Call first thing in main(); returns only when not in child mode. */
static inline void sim_child_main(int argc, char **argv, const struct sim_child_body *b, size_t n)
{
    if (argc != 3 || strcmp(argv[1], "--child"))
        return;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(b[i].name, argv[2]))
            exit(b[i].fn() ? 1 : 0);
    fprintf(stderr, "no child body named %s\n", argv[2]);
    exit(2);
}

static inline int CHILD_OK(int st) { return WIFEXITED(st) && WEXITSTATUS(st) == 0; }
static inline int CHILD_SEGV(int st) { return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV; }

/* Inside a child body: fail the child with a message. */
#define CHILD_CHECK(cond)                                                          \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                              \
        }                                                                          \
    } while (0)

#endif
