/*
 * sn_floor_rt.c — runtime calls that overwrite a whole buffer but do not
 * run: one the runtime rejects (an invalid copy direction), one captured
 * into a graph (it runs only at the graph's launch), and one a capture
 * rule refuses (a legacy-stream memset while a blocking stream captures in
 * global mode). While the graph is captured, another stream's work makes
 * buffers come and go; the graph is then launched several times, and with
 * the argument "update" once more after cudaGraphExecUpdate. Each targets a buffer a memory manager has just moved off
 * the device (the program reads every other buffer first), where an
 * overwrite may tempt it to bring nothing back. The buffers' contents are
 * printed after every step: test_sn_floor.sh requires the same output
 * with and without libsn at a third of the program's memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define NBUF 12
#define BYTES (2u << 20)

static unsigned char *buf[NBUF];
static unsigned char host[BYTES];

static unsigned long sum_of(int i)
{
    unsigned long s = 0xcbf29ce484222325ul; /* FNV-1a */
    if (cudaMemcpy(host, buf[i], BYTES, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 0;
    for (size_t k = 0; k < BYTES; k++)
        s = (s ^ host[k]) * 0x100000001b3ul;
    return s;
}

static void show(const char *step)
{
    printf("%s:", step);
    for (int i = 0; i < NBUF; i++)
        printf(" %lx", sum_of(i));
    printf("\n");
}

/* reads every buffer but `keep_out`, last to first: under a budget the
 * buffer left out is the one longest unused */
static void touch_others(int keep_out)
{
    unsigned char b;
    for (int i = NBUF - 1; i >= 0; i--)
        if (i != keep_out)
            cudaMemcpy(&b, buf[i] + BYTES / 2, 1, cudaMemcpyDeviceToHost);
}

int main(int argc, char **argv)
{
    int update = argc > 1 && strcmp(argv[1], "update") == 0;
    cudaStream_t s, s2;
    if (cudaStreamCreate(&s) != cudaSuccess || cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess)
        return 1;
    for (int i = 0; i < NBUF; i++) {
        if (cudaMalloc((void **)&buf[i], BYTES) != cudaSuccess)
            return 1;
        for (size_t k = 0; k < BYTES; k++)
            host[k] = (unsigned char)(k * (i + 3) + i);
        cudaMemcpy(buf[i], host, BYTES, cudaMemcpyHostToDevice);
    }
    show("filled");

    /* 1. rejected by the runtime: nothing may change */
    touch_others(0);
    memset(host, 0x5a, BYTES);
    cudaError_t rc = cudaMemcpy(buf[0], host, BYTES, (enum cudaMemcpyKind)42);
    printf("copy with an invalid direction: %d (last error %d)\n", (int)rc, (int)cudaGetLastError());
    show("after the rejected copy");

    /* 2. captured: runs at the graph's launch, not before */
    touch_others(1);
    cudaGraph_t g;
    cudaGraphExec_t ge;
    rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    printf("begin capture: %d\n", (int)rc);
    printf("captured memset: %d\n", (int)cudaMemsetAsync(buf[1], 0x77, BYTES, s));
    /* meanwhile another stream's work moves buffers off the device and
     * back: a manager's fences must not touch the capturing stream */
    for (int i = NBUF - 1; i >= 4; i--)
        if (cudaMemsetAsync(buf[i] + 4096 * i, i, 4096, s2) != cudaSuccess)
            printf("memset on the other stream failed\n");
    printf("captured memset: %d\n", (int)cudaMemsetAsync(buf[5] + 100, 0x55, 1000, s));
    printf("end capture: %d\n", (int)cudaStreamEndCapture(s, &g));
    printf("other stream: %d\n", (int)cudaStreamSynchronize(s2));
    printf("instantiate: %d\n", (int)cudaGraphInstantiate(&ge, g, 0));
    show("captured, not launched");
    touch_others(1);
    printf("launch: %d\n", (int)cudaGraphLaunch(ge, s));
    printf("sync: %d\n", (int)cudaStreamSynchronize(s));
    show("launched");
    touch_others(1);
    memset(host, 0, BYTES);
    cudaMemcpy(buf[1], host, BYTES, cudaMemcpyHostToDevice);
    for (int k = 0; k < 5; k++) {
        touch_others(k % 2);
        printf("launch again: %d\n", (int)cudaGraphLaunch(ge, s));
    }
    printf("sync: %d\n", (int)cudaStreamSynchronize(s));
    show("launched again");
    /* with "update": the executable graph changed in place (refused or
     * not, a memory manager can no longer trust what it knew of it, and
     * the next launch needs everything the program has) */
    if (update) {
        cudaGraphExecUpdateResultInfo info;
        printf("update: %d\n", (int)cudaGraphExecUpdate(ge, g, &info));
        cudaGetLastError();
        touch_others(1);
        printf("launch after the update: %d\n", (int)cudaGraphLaunch(ge, s));
        printf("sync: %d\n", (int)cudaStreamSynchronize(s));
        show("launched after the update");
    }

    /* 3. refused by a capture rule: a legacy-stream memset while a blocking
     * stream captures in global mode */
    touch_others(2);
    rc = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    printf("begin capture: %d\n", (int)rc);
    printf("captured memset: %d\n", (int)cudaMemsetAsync(buf[3], 0x11, BYTES, s));
    rc = cudaMemset(buf[2], 0x33, BYTES);
    printf("legacy-stream memset while capturing: %d\n", (int)rc);
    cudaGraph_t g2 = NULL;
    printf("end capture: %d\n", (int)cudaStreamEndCapture(s, &g2));
    if (g2)
        cudaGraphDestroy(g2);
    printf("last error: %d\n", (int)cudaGetLastError());
    show("after the refused memset");

    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    for (int i = 0; i < NBUF; i++)
        cudaFree(buf[i]);
    cudaStreamDestroy(s);
    cudaStreamDestroy(s2);
    return 0;
}
