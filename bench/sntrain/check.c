/*
 * check.c — what the trainer does when a CUDA, cuDNN or cuBLAS call fails:
 * one clear line on stderr naming the call and where it was made, how much
 * device memory was in use when it was an allocation failure, and a
 * distinct exit code (1 for errors, 3 for out of memory).
 */
#include "bench/sntrain/trainer.h"

#include <stdio.h>
#include <stdlib.h>

static void (*exit_hook)(void);

void set_exit_hook(void (*hook)(void))
{
    exit_hook = hook;
}

void trainer_exit(int code)
{
    void (*hook)(void) = exit_hook;
    exit_hook = NULL;
    if (hook)
        hook();
    fflush(stdout);
    exit(code);
}

static void report_memory(void)
{
    size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess)
        fprintf(stderr, "sntrain: %.1f MiB of %.1f MiB device memory in use\n",
                (double)(total_b - free_b) / 1048576.0, (double)total_b / 1048576.0);
}

void fail_cuda(cudaError_t e, const char *call, const char *file, int line)
{
    int oom = e == cudaErrorMemoryAllocation;
    fprintf(stderr, "sntrain: %s%s failed: %s (%s) at %s:%d\n", oom ? "out of memory: " : "",
            call, cudaGetErrorName(e), cudaGetErrorString(e), file, line);
    if (oom)
        report_memory();
    trainer_exit(oom ? EXIT_OOM : EXIT_CUDA_ERROR);
}

void fail_cudnn(cudnnStatus_t s, const char *call, const char *file, int line)
{
    int oom = s == CUDNN_STATUS_ALLOC_FAILED;
    fprintf(stderr, "sntrain: %s%s failed: %s at %s:%d\n", oom ? "out of memory: " : "", call,
            cudnnGetErrorString(s), file, line);
    if (oom)
        report_memory();
    trainer_exit(oom ? EXIT_OOM : EXIT_CUDA_ERROR);
}

void fail_cublas(cublasStatus_t s, const char *call, const char *file, int line)
{
    int oom = s == CUBLAS_STATUS_ALLOC_FAILED;
    fprintf(stderr, "sntrain: %s%s failed: %s at %s:%d\n", oom ? "out of memory: " : "", call,
            cublasGetStatusName(s), file, line);
    if (oom)
        report_memory();
    trainer_exit(oom ? EXIT_OOM : EXIT_CUDA_ERROR);
}
