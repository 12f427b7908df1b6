/*
 * sn_peer.c — peer copies between two devices under memory pressure, the
 * way a data-parallel framework gathers gradients (Caffe's P2PSync): each
 * device fills several buffers, more than its budget holds at once, then
 * every buffer of device 1 is copied to device 0 (cudaMemcpyPeer and
 * cudaMemcpyPeerAsync on a stream of device 0) and device 0's copies are
 * read back and checked. Under manage mode with a small SN_BUDGET the
 * buffers of device 1 have left the device when the copy reads them: libsn
 * must bring them back on device 1, although the call is made on device 0.
 *
 * Prints one line on stdout; exit status 0 when every byte is right.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

enum { NBUF = 6, BUF = 8 << 20 };

#define CHECK(x)                                                                      \
    do {                                                                              \
        cudaError_t rc_ = (x);                                                        \
        if (rc_ != cudaSuccess) {                                                     \
            fprintf(stderr, "sn_peer: %s failed: %s\n", #x, cudaGetErrorString(rc_)); \
            exit(1);                                                                  \
        }                                                                             \
    } while (0)

int main(void)
{
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    if (n < 2) {
        fprintf(stderr, "sn_peer: needs two devices (SIMGPU_DEVICES=2)\n");
        return 1;
    }
    void *src[NBUF], *dst[NBUF];
    CHECK(cudaSetDevice(1));
    for (int i = 0; i < NBUF; i++) {
        CHECK(cudaMalloc(&src[i], BUF));
        CHECK(cudaMemset(src[i], 0x10 + i, BUF));
    }
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaSetDevice(0));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (int i = 0; i < NBUF; i++) {
        CHECK(cudaMalloc(&dst[i], BUF));
        CHECK(cudaMemset(dst[i], 0, BUF));
    }
    for (int i = 0; i < NBUF; i++) {
        if (i % 2)
            CHECK(cudaMemcpyPeerAsync(dst[i], 0, src[i], 1, BUF, s));
        else
            CHECK(cudaMemcpyPeer(dst[i], 0, src[i], 1, BUF));
    }
    CHECK(cudaStreamSynchronize(s));
    unsigned char *host = malloc(BUF);
    int bad = 0;
    for (int i = 0; i < NBUF && host; i++) {
        CHECK(cudaMemcpy(host, dst[i], BUF, cudaMemcpyDeviceToHost));
        for (size_t k = 0; k < BUF; k += 4093)
            if (host[k] != 0x10 + i) {
                bad++;
                break;
            }
    }
    free(host);
    printf("peer copies: %d of %d buffers wrong\n", bad, NBUF);
    return bad || !host ? 1 : 0;
}
