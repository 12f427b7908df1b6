/*
 * sn_chdir_sample.c — a tiny CUDA program for tests/test_sn_paths.sh: it
 * prints one line on stdout before anything else (so a test can tell
 * whether libsn spoke before the program did), makes a few runtime calls
 * (allocate, set, copy back, free) unless told --no-cuda, then changes its
 * working directory (--chdir DIR) the way a framework may after start, and
 * prints a last line. Its stdout is the same with or without libsn.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

int main(int argc, char **argv)
{
    int cuda = 1;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-cuda") == 0) {
            cuda = 0;
        } else if (strcmp(argv[i], "--chdir") == 0 && i + 1 < argc) {
            dir = argv[++i];
        } else {
            fprintf(stderr, "usage: %s [--no-cuda] [--chdir DIR]\n", argv[0]);
            return 1;
        }
    }
    printf("sample start\n");
    fflush(stdout);
    if (cuda) {
        void *d = NULL;
        unsigned char h[256];
        if (cudaMalloc(&d, sizeof h) != cudaSuccess || cudaMemset(d, 7, sizeof h) != cudaSuccess ||
            cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost) != cudaSuccess || cudaFree(d) != cudaSuccess) {
            fprintf(stderr, "sample: a CUDA call failed\n");
            return 1;
        }
        printf("sample read back %d\n", h[255]);
    }
    if (dir && chdir(dir) != 0) {
        perror(dir);
        return 1;
    }
    printf("sample done\n");
    return 0;
}
