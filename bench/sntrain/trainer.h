/*
 * trainer.h — the trainer's run-time state: options, device buffers and
 * their lifetimes, per-layer cuDNN descriptors, and the synthetic data
 * source. exec.c drives a network (net.h) on the device through cuDNN and
 * cuBLAS with one of three allocation styles; data.c produces the batches;
 * main.c parses the command line and prints the results.
 */
#ifndef SNTRAIN_TRAINER_H
#define SNTRAIN_TRAINER_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include "bench/sntrain/net.h"

/* Marks a loop over a host buffer only one thread ever sees (parameter
 * initialisation, the checksum's byte walk): ThreadSanitizer has nothing to
 * find there, and checking each byte made the trainer's TSan runs several
 * times slower. */
#define TRAINER_ONE_THREAD __attribute__((no_sanitize("thread")))

/* Exit codes (documented in docs/trainer.md). */
enum { EXIT_CUDA_ERROR = 1, EXIT_USAGE = 2, EXIT_OOM = 3 };

/* How device memory is obtained, after the frameworks they imitate. */
enum alloc_style {
    ALLOC_CAFFE,   /* per-blob buffers, allocated lazily and kept */
    ALLOC_DARKNET, /* everything allocated at setup */
    ALLOC_DYNAMIC, /* allocated at first use, freed after last use, every iteration */
};

typedef struct train_options {
    net_options net;
    int iters;
    enum alloc_style alloc;
    uint64_t seed;
    float lr, momentum, weight_decay;
    long workspace_limit_mib; /* < 0: the style's default */
    int kernels;              /* element-wise steps as host-function kernel launches */
    int phase_times;          /* time data, forward, backward and update separately */
    const char *dump_graph;
    const char *log_allocs;   /* --log-allocs: every cudaMalloc/cudaFree the trainer makes */
    int eval_every;           /* --eval-every: an evaluation pass after every N-th iteration, 0 none */
    int eval_batch;           /* --eval-batch: its batch, 0 the training batch in effect */
    int rebatch_at, rebatch;  /* --rebatch AT:B: iterations AT.. train at batch B; 0 never */
    int prefetch_lockstep;    /* --prefetch lockstep: the caffe style's thread in step with training */
} train_options;

const char *alloc_style_name(enum alloc_style a);

/* The training batch of iteration iter (1-based) under --rebatch, initial
 * being --batch. */
static inline int train_batch_of(const train_options *o, int initial, long iter)
{
    return o->rebatch_at > 0 && iter >= o->rebatch_at ? o->rebatch : initial;
}

/* The held-out batch every evaluation pass reads (index -1 of the data
 * set: no training batch uses it). */
#define EVAL_BATCH_INDEX (-1L)

/* ---- synthetic data (data.c) ------------------------------------------- */

/* Deterministic data with a learnable rule: each class owns a coarse
 * +-1 pattern over a grid of image cells; an image is its class's pattern
 * plus uniform noise. Batch k depends only on (seed, k). */
typedef struct dataset {
    uint64_t seed;
    int classes, c, h, w, grid;
    float *patterns; /* classes x c x grid x grid */
} dataset;

int dataset_init(dataset *ds, uint64_t seed, int classes, int c, int h, int w);
void dataset_free(dataset *ds);
/* images: batch x c x h x w; onehot: batch x classes; labels: batch. */
void dataset_batch(const dataset *ds, long index, int batch, float *images, float *onehot,
                   int *labels);

/* Caffe-style prefetching: a thread fills pinned host buffers and copies
 * them to device slots with cudaMemcpyAsync on its own stream. Slots are
 * sized for the largest training batch of the run; batch k holds
 * train_batch_of(opt, batch, k + 1) images. */
#define PREFETCH_SLOTS 2
typedef struct prefetch_slot {
    float *host_images, *host_onehot; /* pinned */
    int *labels;
    void *dev_images, *dev_onehot;
    int full;
    long index;
    int batch;                        /* images it holds */
} prefetch_slot;

typedef struct prefetcher {
    const dataset *ds;
    const train_options *opt;
    int batch;                        /* --batch */
    long total;
    size_t image_bytes, onehot_bytes; /* per image */
    prefetch_slot slot[PREFETCH_SLOTS];
    cudaStream_t stream;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, failed, started;
    int lockstep;                     /* each batch copied while the training thread waits */
} prefetcher;

/* Buffers in slot[] must be set up (host pinned + device) before start. */
int prefetch_start(prefetcher *p);
prefetch_slot *prefetch_take(prefetcher *p, long index);
void prefetch_release(prefetcher *p, prefetch_slot *s);
void prefetch_stop(prefetcher *p);

/* ---- device execution (exec.c) ----------------------------------------- */

enum buf_class {
    BUF_SETUP,     /* allocated at setup in every style, never freed */
    BUF_KEEP,      /* darknet: setup; caffe, dynamic: first use, then kept */
    BUF_TRANSIENT, /* darknet: setup; caffe: first use, kept; dynamic: first..last use */
};

/* What a buffer holds, as --log-allocs names it (docs/trainer.md). */
enum buf_role {
    ROLE_WEIGHT,     /* a learned parameter */
    ROLE_MOMENTUM,   /* SGD history */
    ROLE_WGRAD,      /* a parameter's gradient */
    ROLE_STATE,      /* BN running statistics, dropout states */
    ROLE_CONSTANT,   /* the FC bias's vector of ones */
    ROLE_INPUT,      /* the data layer's images and labels */
    ROLE_ACTIVATION, /* a layer's output */
    ROLE_GRADIENT,   /* the gradient of a layer's output */
    ROLE_SAVED,      /* kept from forward for backward: BN batch statistics, dropout mask */
    ROLE_WORKSPACE,  /* convolution scratch */
    ROLE_PREFETCH,   /* the caffe style's device slots of the prefetch thread */
};

const char *buf_role_name(enum buf_role r);

typedef struct dbuf {
    char name[96];
    size_t bytes;    /* what the current batch needs */
    size_t cap;      /* what ptr holds (caffe keeps a larger buffer when the batch shrinks) */
    void *ptr;
    enum buf_class cls;
    int first, last; /* steps of first and last use in an iteration, -1: none */
    int eval_last;   /* the last forward step of an evaluation pass that uses it, -1: none */
    /* for --log-allocs */
    enum buf_role role;
    int consumers;   /* layers that read it */
    int join;        /* the output of a layer with several inputs */
    int accum;       /* a gradient that several layers add into */
} dbuf;

typedef struct tensor_rt {
    int data, diff; /* buffer ids, diff -1 when no gradient */
    cudnnTensorDescriptor_t desc;
} tensor_rt;

typedef struct param_rt {
    int value, grad, hist;
    float *host; /* host mirror (pinned in the caffe style) */
} param_rt;

typedef struct layer_rt {
    int *accum; /* per input: backward adds to (1) or overwrites (0) its gradient */
    /* convolution */
    cudnnFilterDescriptor_t wdesc;
    cudnnConvolutionDescriptor_t cdesc;
    cudnnTensorDescriptor_t bias_desc;
    cudnnConvolutionFwdAlgo_t fwd_algo;
    cudnnConvolutionBwdFilterAlgo_t bwf_algo;
    cudnnConvolutionBwdDataAlgo_t bwd_algo;
    size_t ws_fwd, ws_bwf, ws_bwd;
    int ws_buf; /* caffe: per-layer workspace */
    /* pooling, activation, LRN, add */
    cudnnPoolingDescriptor_t pdesc;
    cudnnActivationDescriptor_t adesc;
    cudnnLRNDescriptor_t ldesc;
    cudnnOpTensorDescriptor_t odesc;
    /* batch norm */
    cudnnTensorDescriptor_t bn_desc;
    int run_mean, run_var, save_mean, save_inv;
    /* dropout */
    cudnnDropoutDescriptor_t ddesc;
    int states, reserve;
    /* concat: a strided view of the output per input */
    cudnnTensorDescriptor_t *views;
    size_t *offsets; /* elements */
} layer_rt;

typedef struct trainer {
    const train_options *opt;
    net *n;
    cudnnHandle_t dnn;
    cublasHandle_t blas;
    dbuf *bufs;
    int nbufs, cap_bufs;
    tensor_rt *trt;
    param_rt *prt;
    layer_rt *lrt;
    int nsteps;          /* 2 * layers: forward, backward, update */
    int ones;            /* buffer of 1.0f, batch long (FC bias) */
    int shared_ws;       /* darknet: one workspace for every layer */
    size_t ws_limit;
    dataset ds;
    prefetcher pf;
    float *host_images, *host_onehot, *host_prob;
    int *host_labels;
    int batch0;          /* --batch: the training batch until --rebatch */
    long iter;           /* batch index being trained */
    int training;        /* setup is over */
    int evaluating;      /* an evaluation pass is running */
    double loss;
    double eval_loss, eval_accuracy;  /* of the last evaluation pass */
    /* memory accounting */
    size_t peak_used, held_bytes, total_bytes;
    int held_count;
    int kernels_ready;
    /* --phase-times: device ms of the last iteration's data loading, forward
     * pass (loss included), backward pass and weight update */
    float phase_ms[4];
    /* the device-side calls of the last iteration, per phase (forward,
     * backward, update; [3]: evaluation passes, not dumped) */
    int phase;
    long step_count[4];
    FILE *alloc_log; /* --log-allocs */
} trainer;

int trainer_setup(trainer *tr, const train_options *opt, net *n);
/* One iteration (at the batch --rebatch gives it); returns its device
 * time in ms and sets tr->loss. */
float trainer_iteration(trainer *tr);
/* A forward-only evaluation pass at the --eval-batch over the held-out
 * batch (batch norm with its running statistics, dropout passing its input
 * through, nothing learned); returns its device time in ms and sets
 * tr->eval_loss and tr->eval_accuracy. */
float trainer_eval(trainer *tr);
/* Reshapes the network to batch images: descriptors, convolution
 * algorithms, and the device buffers that scale with the batch, handled as
 * the style's framework handles them (docs/trainer.md, "Changing the
 * batch"). */
void trainer_set_batch(trainer *tr, int batch);
uint64_t trainer_checksum(trainer *tr);
/* Appends "steps forward F backward B update U" (the last iteration's
 * device-side calls) to the --dump-graph file. */
int trainer_dump_steps(const trainer *tr, const char *path);
void trainer_sample_memory(trainer *tr);
/* Ends the --log-allocs file after the last iteration, so that the frees of
 * the teardown stay out of it; -1 (and a message) if it could not be
 * written. */
int trainer_close_log(trainer *tr);
void trainer_teardown(trainer *tr);

/* ---- error handling (check.c) ------------------------------------------ */

void fail_cuda(cudaError_t e, const char *call, const char *file, int line);
void fail_cudnn(cudnnStatus_t s, const char *call, const char *file, int line);
void fail_cublas(cublasStatus_t s, const char *call, const char *file, int line);
/* Stops the prefetch thread (if any) and exits with code. */
void trainer_exit(int code) __attribute__((noreturn));
void set_exit_hook(void (*hook)(void));

#define CUDA_CHECK(call)                                                                       \
    do {                                                                                       \
        cudaError_t e_ = (call);                                                               \
        if (e_ != cudaSuccess)                                                                 \
            fail_cuda(e_, #call, __FILE__, __LINE__);                                          \
    } while (0)
#define CUDNN_CHECK(call)                                                                      \
    do {                                                                                       \
        cudnnStatus_t s_ = (call);                                                             \
        if (s_ != CUDNN_STATUS_SUCCESS)                                                        \
            fail_cudnn(s_, #call, __FILE__, __LINE__);                                         \
    } while (0)
#define CUBLAS_CHECK(call)                                                                     \
    do {                                                                                       \
        cublasStatus_t s_ = (call);                                                            \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                       \
            fail_cublas(s_, #call, __FILE__, __LINE__);                                        \
    } while (0)

/* Host-function kernels for --kernels (kernels.c). */
int kernels_register(void);
void kernel_sgd(float *w, float *grad, float *hist, int n, float lr, float mom, float wd);
void kernel_loss_grad(float *dx, const float *prob, const float *onehot, int n, float scale);

#endif
