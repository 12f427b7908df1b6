/*
 * sn_missing.c — a program that calls a cuBLAS function the loaded
 * library does not provide (cublasDgemmBatched, absent from the simulated
 * cuBLAS). It is linked with lazy binding, so without libsn it starts and
 * the dynamic loader stops it at that call with "symbol lookup error"
 * (exit status 127). test_sn_reliability.sh requires the same stdout and
 * exit status with libsn preloaded, although libsn exports a wrapper of
 * that name: a wrapper must not bring a missing function to life, neither
 * for a call nor for a program that probes with dlsym(RTLD_DEFAULT, ...).
 */
#include <dlfcn.h>
#include <stdio.h>

#include <cublas_v2.h>

int main(void)
{
    printf("dlsym finds cublasDgemmBatched: %s\n", dlsym(RTLD_DEFAULT, "cublasDgemmBatched") ? "yes" : "no");
    printf("dlsym finds cublasSgemm_v2: %s\n", dlsym(RTLD_DEFAULT, "cublasSgemm_v2") ? "yes" : "no");
    printf("before the call\n");
    fflush(stdout);
    cublasStatus_t rc = cublasDgemmBatched(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, NULL, NULL, 1, NULL, 1,
                                           NULL, NULL, 1, 1);
    printf("after the call: status %d\n", (int)rc);
    return 0;
}
