/*
 * net.h — the trainer's network description: tensors, parameters and layers
 * built in code, independent of any device.
 *
 * A network is a list of layers in a valid execution order (the forward pass
 * runs it front to back, the backward pass back to front). Layers exchange
 * activations through tensors (NCHW float32); learned values live in
 * parameters. The executor (exec.c) turns this description into device
 * buffers and cuDNN/cuBLAS calls; models.c builds the networks; the same
 * description is what --dump-graph writes, so that what libsn infers from
 * the calls can be checked against what the trainer actually ran.
 */
#ifndef SNTRAIN_NET_H
#define SNTRAIN_NET_H

#include <stddef.h>

typedef struct shape {
    int n, c, h, w;
} shape;

static inline size_t shape_count(shape s)
{
    return (size_t)s.n * (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

enum layer_type {
    L_DATA,         /* produces the image batch and the one-hot labels */
    L_CONV,         /* convolution, optional bias */
    L_BN,           /* spatial batch normalisation, training mode */
    L_RELU,
    L_MAXPOOL,
    L_AVGPOOL,
    L_LRN,          /* cross-channel local response normalisation */
    L_DROPOUT,
    L_FC,           /* fully connected through cuBLAS */
    L_CONCAT,       /* channel concatenation */
    L_ADD,          /* element-wise sum of two tensors */
    L_SOFTMAX_LOSS, /* softmax + cross-entropy against the labels */
};

const char *layer_type_name(enum layer_type t);

enum init_kind { INIT_ZERO, INIT_ONE, INIT_UNIFORM };

typedef struct tensor {
    char name[64];
    shape s;
    int producer;     /* layer index */
    int nconsumers;
    int needs_diff;   /* a gradient flows back into it */
} tensor;

typedef struct param {
    char name[64];
    int dims[4];
    int ndims;
    size_t count;
    enum init_kind init;
    float init_range; /* INIT_UNIFORM: values in [-range, range] */
} param;

#define LAYER_MAX_PARAMS 4

typedef struct layer {
    enum layer_type type;
    char name[64];
    int *in;          /* input tensor ids */
    int nin;
    int out;          /* output tensor id */
    int param[LAYER_MAX_PARAMS];
    int nparam;
    /* convolution and pooling geometry */
    int kh, kw, sh, sw, ph, pw;
    int has_bias;
    /* FC: output features */
    int fc_out;
    /* dropout */
    float drop_p;
    /* LRN */
    unsigned lrn_n;
    double lrn_alpha, lrn_beta, lrn_k;
} layer;

typedef struct net {
    char kind[32];     /* alexnet, vgg, ... */
    char variant[64];  /* e.g. "resnet-50 (bottleneck)" */
    int depth, width, classes;
    shape input;
    layer *layers;
    int nlayers, cap_layers;
    tensor *tensors;
    int ntensors, cap_tensors;
    param *params;
    int nparams, cap_params;
    int data_tensor;   /* image batch */
    int label_tensor;  /* one-hot labels, n x classes */
    int prob_tensor;   /* softmax output */
} net;

/* snprintf for layer names: a name longer than its buffer is cut short,
 * which only affects messages and the graph dump. */
void net_name(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Construction (models.c uses these; each returns the new output tensor). */
net *net_new(const char *kind, shape input, int classes);
void net_free(net *n);
int net_conv(net *n, const char *name, int in, int cout, int kh, int kw, int sh, int sw,
             int ph, int pw, int bias);
int net_bn(net *n, const char *name, int in);
int net_relu(net *n, const char *name, int in);
int net_pool(net *n, const char *name, int in, int max, int k, int stride, int pad);
int net_global_avgpool(net *n, const char *name, int in);
int net_lrn(net *n, const char *name, int in, unsigned size, double alpha, double beta, double k);
int net_dropout(net *n, const char *name, int in, float p);
int net_fc(net *n, const char *name, int in, int nout, float init_range);
int net_concat(net *n, const char *name, const int *ins, int nin);
int net_add(net *n, const char *name, int a, int b);
void net_softmax_loss(net *n, const char *name, int in);

/* Fills in consumer counts and which tensors need gradients; reports the
 * first inconsistency (empty shape, dangling tensor) and returns -1. */
int net_finish(net *n);

size_t net_param_count(const net *n);

/* Writes the layer list in the documented text format (docs/trainer.md). */
int net_dump(const net *n, const char *path, const char *alloc_style);

/* Which networks exist and how their options default. */
typedef struct net_options {
    const char *kind;
    int depth;   /* 0: network default */
    int width;   /* 0: network default */
    int batch;   /* 0: network default */
    int input;   /* 0: network default */
    int classes; /* 0: network default */
} net_options;

/* Builds the network named by o->kind; prints the reason and returns NULL
 * when the options do not describe a valid network. */
net *build_network(const net_options *o);
int network_known(const char *kind);
/* Defaults for the options left 0 (depth, width, batch, input, classes). */
void network_defaults(net_options *o);

#endif
