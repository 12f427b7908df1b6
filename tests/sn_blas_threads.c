/*
 * sn_blas_threads.c — two threads, each with its own stream and cuBLAS
 * handle, multiplying their own matrices in a loop, as a framework's
 * compute threads (or two models in one process) do. Under a tight budget
 * libsn moves memory for one thread while the other asks the driver for
 * more: test_sn_budget_race.sh checks that the results match the run
 * without libsn and that the budget is not lowered by libsn's own memory
 * still on its way back to the driver.
 *
 *   sn_blas_threads N ITERS   (N matrices of 512x512 floats, 1 MiB, per thread)
 *
 * Prints each thread's checksum of its results.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

enum { DIM = 512, MAXN = 32 };

typedef struct {
    int id, n, iters;
    unsigned long sum;
    int failed;
} job;

static void *run(void *arg)
{
    job *j = arg;
    cudaStream_t s;
    cublasHandle_t h;
    float *m[MAXN];
    size_t bytes = sizeof(float) * DIM * DIM;
    float *host = malloc(bytes);
    if (!host || cudaStreamCreate(&s) != cudaSuccess || cublasCreate(&h) != CUBLAS_STATUS_SUCCESS ||
        cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS) {
        j->failed = 1;
        free(host);
        return NULL;
    }
    for (int k = 0; k < j->n; k++) {
        for (int e = 0; e < DIM * DIM; e++)
            host[e] = (float)((e * 7 + k * 13 + j->id * 5) % 17) / 16.0f - 0.5f;
        if (cudaMalloc((void **)&m[k], bytes) != cudaSuccess ||
            cudaMemcpyAsync(m[k], host, bytes, cudaMemcpyHostToDevice, s) != cudaSuccess)
            j->failed = 1;
    }
    const float one = 1.0f, tiny = 0.01f;
    for (int it = 0; it < j->iters && !j->failed; it++) {
        for (int k = 0; k < j->n; k++) {
            float *a = m[k], *b = m[(k + 1) % j->n], *c = m[(k + 2) % j->n];
            /* c = tiny * a * b + c: every matrix stays bounded */
            if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &tiny, a, DIM, b, DIM, &one, c, DIM) !=
                CUBLAS_STATUS_SUCCESS)
                j->failed = 1;
        }
    }
    unsigned long sum = 0xcbf29ce484222325ul;
    for (int k = 0; k < j->n && !j->failed; k++) {
        if (cudaMemcpyAsync(host, m[k], bytes, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
            cudaStreamSynchronize(s) != cudaSuccess) {
            j->failed = 1;
            break;
        }
        const unsigned char *p = (const unsigned char *)host;
        for (size_t e = 0; e < bytes; e++)
            sum = (sum ^ p[e]) * 0x100000001b3ul;
    }
    j->sum = sum;
    for (int k = 0; k < j->n; k++)
        cudaFree(m[k]);
    cublasDestroy(h);
    cudaStreamDestroy(s);
    free(host);
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 8, iters = argc > 2 ? atoi(argv[2]) : 10;
    if (n < 3 || n > MAXN)
        return 2;
    job jobs[2] = {{0, n, iters, 0, 0}, {1, n, iters, 0, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t[i], NULL, run, &jobs[i]) != 0)
            return 1;
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < 2; i++)
        printf("thread %d: %s %lx\n", i, jobs[i].failed ? "failed" : "ok", jobs[i].sum);
    return jobs[0].failed || jobs[1].failed;
}
