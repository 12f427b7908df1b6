/*
 * test_sim_context.c — driver initialisation, contexts and threads on the
 * simulated device, seen the way an unmodified program sees them: compiled
 * against the real headers, linked against the real import libraries, run
 * on the simulator through LD_LIBRARY_PATH only.
 *
 * The two-thread test is also the one ThreadSanitizer reads
 * (make SANITIZE=thread test): a data race inside the simulated libraries
 * makes the binary exit non-zero there.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>
#include <cuda_runtime_api.h>


/* ---- threads ----------------------------------------------------------------- */

struct worker { unsigned char seed; int rounds; int failed; };

/* Pinned and device allocations, a set and copies of 4 KiB, freed again: the
 * pattern of a data-loading thread next to a training thread. The pinned
 * allocation comes first, while neither thread has taken the simulator's
 * lock yet, which is when unlocked shared state is exposed. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned char back[4096];
    for (int i = 0; i < w->rounds && !w->failed; i++) {
        void *d = NULL, *h = NULL;
        if (cudaMallocHost(&h, 4096) != cudaSuccess || cudaMalloc(&d, 4096) != cudaSuccess) {
            w->failed = 1;
            break;
        }
        unsigned char v = (unsigned char)(w->seed + i);
        if (cudaMemset(d, v, 4096) != cudaSuccess || cudaMemcpy(h, d, 4096, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(back, h, 4096, cudaMemcpyHostToHost) != cudaSuccess)
            w->failed = 1;
        for (size_t k = 0; k < sizeof back && !w->failed; k++)
            if (back[k] != v)
                w->failed = 1;
        if (cudaFree(d) != cudaSuccess || cudaFreeHost(h) != cudaSuccess)
            w->failed = 1;
    }
    return NULL;
}

static void test_two_threads_allocate_copy_free(void **state)
{
    (void)state;
    pthread_t t[2];
    struct worker w[2] = {{0x11, 200, 0}, {0x80, 200, 0}};
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_false(w[0].failed);
    assert_false(w[1].failed);
    size_t fr, tot;
    assert_int_equal(cudaMemGetInfo(&fr, &tot), cudaSuccess);
    assert_int_equal(fr, tot);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_threads_allocate_copy_free),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
