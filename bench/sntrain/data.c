/*
 * data.c — the synthetic data set and the Caffe-style prefetch thread.
 *
 * The data must be identical whatever the allocation style, the thread
 * timing or the device, so every image is a pure function of (seed, batch
 * index, position in the batch), drawn from splitmix64 streams. The rule is
 * easy to learn: a class is a coarse +-1 pattern over a grid of image cells,
 * so even a few SGD steps lower the loss.
 */
#include "bench/sntrain/trainer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [-1, 1) from the top 24 bits, exactly representable. */
static float uniform_pm1(uint64_t *state)
{
    return (float)(splitmix64(state) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

#define CELL_CONTRAST 0.5f
#define NOISE 0.5f

int dataset_init(dataset *ds, uint64_t seed, int classes, int c, int h, int w)
{
    memset(ds, 0, sizeof *ds);
    ds->seed = seed;
    ds->classes = classes, ds->c = c, ds->h = h, ds->w = w;
    ds->grid = h < 4 || w < 4 ? 1 : 4;
    size_t n = (size_t)classes * (size_t)c * (size_t)ds->grid * (size_t)ds->grid;
    ds->patterns = malloc(n * sizeof(float));
    if (!ds->patterns)
        return -1;
    /* A class's cells share a per-channel level (what global pooling sees
     * at once) and differ by +-CELL_CONTRAST around it (what convolutions
     * have to find). */
    uint64_t st = seed ^ 0x5eed0fda7a5e7ull;
    size_t cells = (size_t)ds->grid * (size_t)ds->grid;
    for (size_t pc = 0; pc < n / cells; pc++) {
        float level = uniform_pm1(&st);
        for (size_t i = 0; i < cells; i++)
            ds->patterns[pc * cells + i] =
                level + ((splitmix64(&st) >> 63) ? CELL_CONTRAST : -CELL_CONTRAST);
    }
    return 0;
}

void dataset_free(dataset *ds)
{
    free(ds->patterns);
    ds->patterns = NULL;
}

void dataset_batch(const dataset *ds, long index, int batch, float *images, float *onehot,
                   int *labels)
{
    size_t plane = (size_t)ds->h * (size_t)ds->w;
    size_t per_image = plane * (size_t)ds->c;
    const int g = ds->grid;
    memset(onehot, 0, sizeof(float) * (size_t)batch * (size_t)ds->classes);
    uint64_t bst = ds->seed * 0x9e3779b97f4a7c15ull + (uint64_t)index;
    uint64_t first_label = splitmix64(&bst) % (uint64_t)ds->classes;
    for (int b = 0; b < batch; b++) {
        uint64_t st = ds->seed * 0x2545f4914f6cdd1dull + (uint64_t)index * 0x100000001b3ull +
                      (uint64_t)b;
        splitmix64(&st);
        /* Consecutive labels from a random start: every batch is as
         * balanced as its size allows, so losses of successive batches
         * differ by what was learned rather than by their label mix. */
        int label = (int)((first_label + (uint64_t)b) % (uint64_t)ds->classes);
        labels[b] = label;
        onehot[(size_t)b * (size_t)ds->classes + (size_t)label] = 1.0f;
        const float *pat = ds->patterns + (size_t)label * (size_t)ds->c * (size_t)(g * g);
        float *img = images + (size_t)b * per_image;
        for (int ch = 0; ch < ds->c; ch++)
            for (int y = 0; y < ds->h; y++) {
                const float *row = pat + ((size_t)ch * (size_t)g + (size_t)(y * g / ds->h)) *
                                             (size_t)g;
                float *out = img + (size_t)ch * plane + (size_t)y * (size_t)ds->w;
                for (int x = 0; x < ds->w; x++)
                    out[x] = row[x * g / ds->w] + NOISE * uniform_pm1(&st);
            }
    }
}

/* ---- prefetch thread ---------------------------------------------------- */

static void *prefetch_main(void *arg)
{
    prefetcher *p = arg;
    for (long k = 0; k < p->total; k++) {
        prefetch_slot *s = &p->slot[k % PREFETCH_SLOTS];
        pthread_mutex_lock(&p->mu);
        while (s->full && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            break;
        int batch = train_batch_of(p->opt, p->batch, k + 1);
        dataset_batch(p->ds, k, batch, s->host_images, s->host_onehot, s->labels);
        cudaError_t e = cudaMemcpyAsync(s->dev_images, s->host_images, p->image_bytes * (size_t)batch,
                                        cudaMemcpyHostToDevice, p->stream);
        if (e == cudaSuccess)
            e = cudaMemcpyAsync(s->dev_onehot, s->host_onehot, p->onehot_bytes * (size_t)batch,
                                cudaMemcpyHostToDevice, p->stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(p->stream);
        pthread_mutex_lock(&p->mu);
        if (e != cudaSuccess) {
            fprintf(stderr, "sntrain: prefetch of batch %ld failed: %s\n", k,
                    cudaGetErrorString(e));
            p->failed = 1;
        } else {
            s->full = 1;
            s->index = k;
            s->batch = batch;
        }
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (e != cudaSuccess)
            break;
    }
    return NULL;
}

/* Waits, holding p->mu, until slot s holds batch index (or the thread failed). */
static void prefetch_wait_locked(prefetcher *p, const prefetch_slot *s, long index)
{
    while (!(s->full && s->index == index) && !p->failed)
        pthread_cond_wait(&p->cv, &p->mu);
}

int prefetch_start(prefetcher *p)
{
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    cudaError_t e = cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        fprintf(stderr, "sntrain: cudaStreamCreateWithFlags failed: %s\n", cudaGetErrorString(e));
        return -1;
    }
    if (pthread_create(&p->thread, NULL, prefetch_main, p) != 0) {
        fprintf(stderr, "sntrain: cannot start the prefetch thread\n");
        return -1;
    }
    p->started = 1;
    /* lockstep: the first batches are in place before training goes on */
    pthread_mutex_lock(&p->mu);
    for (long k = 0; p->lockstep && k < PREFETCH_SLOTS && k < p->total; k++)
        prefetch_wait_locked(p, &p->slot[k], k);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

prefetch_slot *prefetch_take(prefetcher *p, long index)
{
    prefetch_slot *s = &p->slot[index % PREFETCH_SLOTS];
    pthread_mutex_lock(&p->mu);
    prefetch_wait_locked(p, s, index);
    int failed = p->failed;
    pthread_mutex_unlock(&p->mu);
    return failed ? NULL : s;
}

void prefetch_release(prefetcher *p, prefetch_slot *s)
{
    pthread_mutex_lock(&p->mu);
    long next = s->index + PREFETCH_SLOTS;
    s->full = 0;
    pthread_cond_broadcast(&p->cv);
    /* lockstep: the batch the slot is refilled with is copied now, while
     * this thread waits, so its calls come at one place in the sequence */
    if (p->lockstep && next < p->total)
        prefetch_wait_locked(p, s, next);
    pthread_mutex_unlock(&p->mu);
}

void prefetch_stop(prefetcher *p)
{
    if (!p->started)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    p->started = 0;
    cudaStreamDestroy(p->stream);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
}
