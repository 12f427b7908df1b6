/*
 * sn_threads.c — a program with the concurrency habits of real frameworks,
 * run with and without libsn by test_sn_reliability.sh:
 *
 *   sn_threads race THREADS ITERS
 *       THREADS threads each allocate, set, copy back and free a 4 KiB
 *       buffer ITERS times: frees and allocations of the same address race
 *       between threads, as they do in a framework's data-loader and
 *       compute threads. Every copy is checked against the value set.
 *   sn_threads fork CHILDREN
 *       two threads run the loop above while the main thread forks
 *       CHILDREN times (a data loader, system()); each child exits at once
 *       through exit(), running the exit handlers. A child that has not
 *       ended after 10 s counts as hung and is killed.
 *
 * Prints one summary line on stdout; exit status 0 when everything held.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

enum { SN_BUF = 4096 };

typedef struct loop_arg {
    int id;
    long iters;          /* < 0: until stop is set */
    long done, bad;
} loop_arg;

static int stop;

static void *loop(void *p)
{
    loop_arg *a = p;
    unsigned char host[SN_BUF];
    for (long i = 0; a->iters < 0 ? !__atomic_load_n(&stop, __ATOMIC_ACQUIRE) : i < a->iters; i++) {
        void *d = NULL;
        if (cudaMalloc(&d, SN_BUF) != cudaSuccess) {
            a->bad++;
            continue;
        }
        int v = (int)((a->id * 31 + i) & 0xff);
        if (cudaMemset(d, v, SN_BUF) != cudaSuccess ||
            cudaMemcpy(host, d, SN_BUF, cudaMemcpyDeviceToHost) != cudaSuccess)
            a->bad++;
        else if (host[0] != v || host[SN_BUF - 1] != v)
            a->bad++;
        if (cudaFree(d) != cudaSuccess)
            a->bad++;
        a->done++;
    }
    return NULL;
}

static int run_race(int nthreads, long iters)
{
    pthread_t th[64];
    loop_arg args[64];
    if (nthreads < 1 || nthreads > 64)
        return 2;
    for (int t = 0; t < nthreads; t++) {
        args[t] = (loop_arg){.id = t, .iters = iters};
        pthread_create(&th[t], NULL, loop, &args[t]);
    }
    long done = 0, bad = 0;
    for (int t = 0; t < nthreads; t++) {
        pthread_join(th[t], NULL);
        done += args[t].done;
        bad += args[t].bad;
    }
    printf("race: %d threads, %ld rounds, %ld bad\n", nthreads, done, bad);
    return bad ? 1 : 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run_fork(int children)
{
    /* the device is initialised before any thread or child exists */
    void *warm = NULL;
    if (cudaMalloc(&warm, SN_BUF) != cudaSuccess || cudaFree(warm) != cudaSuccess)
        return 2;
    pthread_t th[2];
    loop_arg args[2];
    for (int t = 0; t < 2; t++) {
        args[t] = (loop_arg){.id = t, .iters = -1};
        pthread_create(&th[t], NULL, loop, &args[t]);
    }
    int hung = 0, failed = 0;
    for (int c = 0; c < children; c++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0)
            exit(0);
        if (pid < 0) {
            failed++;
            continue;
        }
        int status = 0;
        double deadline = now_s() + 10.0;
        pid_t r;
        while ((r = waitpid(pid, &status, WNOHANG)) == 0 && now_s() < deadline)
            usleep(1000);
        if (r == 0) {
            hung++;
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
        } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            failed++;
        }
    }
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    long bad = 0;
    for (int t = 0; t < 2; t++) {
        pthread_join(th[t], NULL);
        bad += args[t].bad;
    }
    printf("fork: %d children, %d hung, %d failed, %ld bad rounds\n", children, hung, failed, bad);
    return hung || failed || bad ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "race") == 0)
        return run_race(atoi(argv[2]), atol(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "fork") == 0)
        return run_fork(atoi(argv[2]));
    fprintf(stderr, "usage: %s race THREADS ITERS | fork CHILDREN\n", argv[0]);
    return 2;
}
