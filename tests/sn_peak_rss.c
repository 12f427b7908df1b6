/*
 * sn_peak_rss.c — runs a command and writes its peak resident memory, in
 * bytes, to a file: `sn_peak_rss OUT command args...`. The command's
 * standard streams are passed through and its exit status is returned (128
 * + the signal if a signal ended it).
 *
 * A test helper because the peak must be measured from a small parent: a
 * process's ru_maxrss includes the peak of the memory image it was exec'ed
 * from, so a command started from a script interpreter reports at least
 * the interpreter's size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sn_peak_rss OUT command [args...]\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("sn_peak_rss: fork");
        return 2;
    }
    if (pid == 0) {
        execvp(argv[2], argv + 2);
        perror("sn_peak_rss: exec");
        _exit(127);
    }
    int status = 0;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) < 0) {
        perror("sn_peak_rss: wait4");
        return 2;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f || fprintf(f, "%ld\n", ru.ru_maxrss * 1024L) < 0 || fclose(f) != 0) {
        perror("sn_peak_rss: writing the result");
        return 2;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
