/*
 * sn_capture.c — a program whose first stream work is captured into a CUDA
 * graph (as frameworks that use graphs do from their first iteration): two
 * memsets captured on a blocking stream in global mode, the graph
 * instantiated and launched three times, the buffer checked after each.
 * test_sn_reliability.sh requires the same output with and without libsn:
 * libsn must not invalidate the capture (an event on the legacy stream
 * would) nor add nodes to the graph (an event recorded on the capturing
 * stream would).
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#define CHECK(x)                                                               \
    do {                                                                       \
        cudaError_t rc_ = (x);                                                 \
        printf("%-60s %d\n", #x, (int)rc_);                                    \
        if (rc_ != cudaSuccess)                                                \
            return 1;                                                          \
    } while (0)

int main(void)
{
    cudaStream_t s;
    unsigned char *d = NULL, host[4096];
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMalloc((void **)&d, sizeof host));
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CHECK(cudaMemsetAsync(d, 1, sizeof host, s));
    CHECK(cudaMemsetAsync(d + 1024, 2, 1024, s));
    cudaGraph_t graph;
    CHECK(cudaStreamEndCapture(s, &graph));
    size_t nodes = 0;
    CHECK(cudaGraphGetNodes(graph, NULL, &nodes));
    printf("graph nodes: %zu\n", nodes);
    cudaGraphExec_t exec;
    CHECK(cudaGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 3; i++) {
        CHECK(cudaMemset(d, 0, sizeof host));
        CHECK(cudaGraphLaunch(exec, s));
        CHECK(cudaStreamSynchronize(s));
        CHECK(cudaMemcpy(host, d, sizeof host, cudaMemcpyDeviceToHost));
        printf("launch %d: %d %d %d\n", i, host[0], host[1500], host[4095]);
    }
    CHECK(cudaGraphExecDestroy(exec));
    CHECK(cudaGraphDestroy(graph));
    CHECK(cudaFree(d));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
