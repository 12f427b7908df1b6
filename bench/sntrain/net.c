/*
 * net.c — building the device-independent network description (net.h):
 * shape inference for every layer type, parameter shapes and their
 * initialisation ranges, consumer counts, and the --dump-graph text format.
 */
#include "bench/sntrain/net.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *layer_type_name(enum layer_type t)
{
    switch (t) {
    case L_DATA: return "data";
    case L_CONV: return "conv";
    case L_BN: return "batchnorm";
    case L_RELU: return "relu";
    case L_MAXPOOL: return "maxpool";
    case L_AVGPOOL: return "avgpool";
    case L_LRN: return "lrn";
    case L_DROPOUT: return "dropout";
    case L_FC: return "fc";
    case L_CONCAT: return "concat";
    case L_ADD: return "add";
    case L_SOFTMAX_LOSS: return "softmax_loss";
    }
    return "?";
}

void net_name(char *buf, size_t cap, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

static void *grow(void *p, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return p;
    int c = *cap ? *cap * 2 : 64;
    while (c < need)
        c *= 2;
    void *q = realloc(p, (size_t)c * elem);
    if (!q) {
        fprintf(stderr, "sntrain: out of host memory building the network\n");
        exit(1);
    }
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(c - *cap) * elem);
    *cap = c;
    return q;
}

static void copy_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src);
}

static int add_tensor(net *n, const char *name, shape s, int producer)
{
    n->tensors = grow(n->tensors, &n->cap_tensors, n->ntensors + 1, sizeof(tensor));
    tensor *t = &n->tensors[n->ntensors];
    copy_name(t->name, sizeof t->name, name);
    t->s = s;
    t->producer = producer;
    return n->ntensors++;
}

static int add_param(net *n, const char *layer_name, const char *suffix, const int *dims, int ndims,
                     enum init_kind init, float range)
{
    n->params = grow(n->params, &n->cap_params, n->nparams + 1, sizeof(param));
    param *p = &n->params[n->nparams];
    snprintf(p->name, sizeof p->name, "%s.%s", layer_name, suffix);
    p->ndims = ndims;
    p->count = 1;
    for (int i = 0; i < ndims; i++) {
        p->dims[i] = dims[i];
        p->count *= (size_t)dims[i];
    }
    p->init = init;
    p->init_range = range;
    return n->nparams++;
}

/* A new layer with its output tensor named after it. */
static layer *add_layer(net *n, enum layer_type type, const char *name, const int *ins, int nin,
                        shape out)
{
    if (out.n <= 0 || out.c <= 0 || out.h <= 0 || out.w <= 0) {
        fprintf(stderr,
                "sntrain: layer %s would produce an empty %dx%dx%dx%d output; "
                "use a larger --input or --width\n",
                name, out.n, out.c, out.h, out.w);
        exit(2);
    }
    n->layers = grow(n->layers, &n->cap_layers, n->nlayers + 1, sizeof(layer));
    layer *l = &n->layers[n->nlayers];
    l->type = type;
    copy_name(l->name, sizeof l->name, name);
    l->nin = nin;
    l->in = nin ? malloc(sizeof(int) * (size_t)nin) : NULL;
    for (int i = 0; i < nin; i++)
        l->in[i] = ins[i];
    l->out = add_tensor(n, name, out, n->nlayers);
    n->nlayers++;
    return l;
}

net *net_new(const char *kind, shape input, int classes)
{
    net *n = calloc(1, sizeof *n);
    if (!n)
        return NULL;
    copy_name(n->kind, sizeof n->kind, kind);
    n->input = input;
    n->classes = classes;
    layer *d = add_layer(n, L_DATA, "data", NULL, 0, input);
    n->data_tensor = d->out;
    n->label_tensor = add_tensor(n, "label", (shape){input.n, classes, 1, 1}, 0);
    n->prob_tensor = -1;
    return n;
}

void net_free(net *n)
{
    if (!n)
        return;
    for (int i = 0; i < n->nlayers; i++)
        free(n->layers[i].in);
    free(n->layers);
    free(n->tensors);
    free(n->params);
    free(n);
}

static shape tshape(const net *n, int t)
{
    return n->tensors[t].s;
}

int net_conv(net *n, const char *name, int in, int cout, int kh, int kw, int sh, int sw, int ph,
             int pw, int bias)
{
    shape x = tshape(n, in);
    shape y = {x.n, cout, (x.h + 2 * ph - kh) / sh + 1, (x.w + 2 * pw - kw) / sw + 1};
    if (x.h + 2 * ph < kh || x.w + 2 * pw < kw)
        y.h = 0;
    layer *l = add_layer(n, L_CONV, name, &in, 1, y);
    l->kh = kh, l->kw = kw, l->sh = sh, l->sw = sw, l->ph = ph, l->pw = pw;
    l->has_bias = bias;
    int fan_in = x.c * kh * kw;
    /* He-uniform: keeps activations of ReLU networks at a stable scale. */
    int wd[4] = {cout, x.c, kh, kw};
    l->param[l->nparam++] =
        add_param(n, name, "weight", wd, 4, INIT_UNIFORM, (float)sqrt(6.0 / fan_in));
    if (bias) {
        int bd[1] = {cout};
        l->param[l->nparam++] = add_param(n, name, "bias", bd, 1, INIT_ZERO, 0);
    }
    return l->out;
}

int net_bn(net *n, const char *name, int in)
{
    shape x = tshape(n, in);
    layer *l = add_layer(n, L_BN, name, &in, 1, x);
    int d[1] = {x.c};
    l->param[l->nparam++] = add_param(n, name, "scale", d, 1, INIT_ONE, 0);
    l->param[l->nparam++] = add_param(n, name, "shift", d, 1, INIT_ZERO, 0);
    return l->out;
}

int net_relu(net *n, const char *name, int in)
{
    return add_layer(n, L_RELU, name, &in, 1, tshape(n, in))->out;
}

int net_pool(net *n, const char *name, int in, int max, int k, int stride, int pad)
{
    shape x = tshape(n, in);
    shape y = {x.n, x.c, (x.h + 2 * pad - k) / stride + 1, (x.w + 2 * pad - k) / stride + 1};
    if (x.h + 2 * pad < k || x.w + 2 * pad < k)
        y.h = 0;
    layer *l = add_layer(n, max ? L_MAXPOOL : L_AVGPOOL, name, &in, 1, y);
    l->kh = l->kw = k;
    l->sh = l->sw = stride;
    l->ph = l->pw = pad;
    return l->out;
}

int net_global_avgpool(net *n, const char *name, int in)
{
    shape x = tshape(n, in);
    layer *l = add_layer(n, L_AVGPOOL, name, &in, 1, (shape){x.n, x.c, 1, 1});
    l->kh = x.h, l->kw = x.w;
    l->sh = x.h, l->sw = x.w;
    return l->out;
}

int net_lrn(net *n, const char *name, int in, unsigned size, double alpha, double beta, double k)
{
    layer *l = add_layer(n, L_LRN, name, &in, 1, tshape(n, in));
    l->lrn_n = size;
    l->lrn_alpha = alpha, l->lrn_beta = beta, l->lrn_k = k;
    return l->out;
}

int net_dropout(net *n, const char *name, int in, float p)
{
    layer *l = add_layer(n, L_DROPOUT, name, &in, 1, tshape(n, in));
    l->drop_p = p;
    return l->out;
}

int net_fc(net *n, const char *name, int in, int nout, float init_range)
{
    shape x = tshape(n, in);
    int k = x.c * x.h * x.w;
    layer *l = add_layer(n, L_FC, name, &in, 1, (shape){x.n, nout, 1, 1});
    l->fc_out = nout;
    l->has_bias = 1;
    int wd[2] = {nout, k};
    float range = init_range > 0 ? init_range : (float)sqrt(6.0 / k);
    l->param[l->nparam++] = add_param(n, name, "weight", wd, 2, INIT_UNIFORM, range);
    int bd[1] = {nout};
    l->param[l->nparam++] = add_param(n, name, "bias", bd, 1, INIT_ZERO, 0);
    return l->out;
}

int net_concat(net *n, const char *name, const int *ins, int nin)
{
    shape y = tshape(n, ins[0]);
    y.c = 0;
    for (int i = 0; i < nin; i++) {
        shape x = tshape(n, ins[i]);
        if (x.n != y.n || x.h != y.h || x.w != y.w) {
            fprintf(stderr, "sntrain: concat %s joins %dx%d with %dx%d maps\n", name, y.h, y.w,
                    x.h, x.w);
            exit(2);
        }
        y.c += x.c;
    }
    return add_layer(n, L_CONCAT, name, ins, nin, y)->out;
}

int net_add(net *n, const char *name, int a, int b)
{
    shape x = tshape(n, a), z = tshape(n, b);
    if (x.n != z.n || x.c != z.c || x.h != z.h || x.w != z.w) {
        fprintf(stderr, "sntrain: add %s of differently shaped tensors\n", name);
        exit(2);
    }
    int ins[2] = {a, b};
    return add_layer(n, L_ADD, name, ins, 2, x)->out;
}

void net_softmax_loss(net *n, const char *name, int in)
{
    shape x = tshape(n, in);
    if (x.c * x.h * x.w != n->classes) {
        fprintf(stderr, "sntrain: loss %s sees %d features for %d classes\n", name,
                x.c * x.h * x.w, n->classes);
        exit(2);
    }
    int ins[2] = {in, n->label_tensor};
    layer *l = add_layer(n, L_SOFTMAX_LOSS, name, ins, 2, (shape){x.n, n->classes, 1, 1});
    n->prob_tensor = l->out;
}

int net_finish(net *n)
{
    for (int t = 0; t < n->ntensors; t++)
        n->tensors[t].nconsumers = 0;
    for (int i = 0; i < n->nlayers; i++) {
        const layer *l = &n->layers[i];
        for (int k = 0; k < l->nin; k++) {
            if (l->in[k] < 0 || l->in[k] >= n->ntensors ||
                (n->tensors[l->in[k]].producer >= i && l->in[k] != n->label_tensor)) {
                fprintf(stderr, "sntrain: layer %s reads a tensor not produced before it\n",
                        l->name);
                return -1;
            }
            n->tensors[l->in[k]].nconsumers++;
        }
    }
    if (n->prob_tensor < 0) {
        fprintf(stderr, "sntrain: network %s has no loss layer\n", n->kind);
        return -1;
    }
    for (int t = 0; t < n->ntensors; t++) {
        tensor *x = &n->tensors[t];
        if (t != n->prob_tensor && x->nconsumers == 0) {
            fprintf(stderr, "sntrain: tensor %s is never used\n", x->name);
            return -1;
        }
        /* Everything between the data and the loss carries a gradient. */
        x->needs_diff = t != n->data_tensor && t != n->label_tensor && t != n->prob_tensor;
    }
    return 0;
}

size_t net_param_count(const net *n)
{
    size_t c = 0;
    for (int p = 0; p < n->nparams; p++)
        c += n->params[p].count;
    return c;
}

static void dump_shape(FILE *f, shape s)
{
    fprintf(f, "%dx%dx%dx%d", s.n, s.c, s.h, s.w);
}

int net_dump(const net *n, const char *path, const char *alloc_style)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return -1;
    }
    fprintf(f, "# sntrain graph v1\n");
    fprintf(f, "net %s variant %s depth %d width %d batch %d input %dx%dx%d classes %d alloc %s\n",
            n->kind, n->variant, n->depth, n->width, n->input.n, n->input.c, n->input.h,
            n->input.w, n->classes, alloc_style);
    fprintf(f, "counts layers %d tensors %d params %d param_floats %zu\n", n->nlayers,
            n->ntensors, n->nparams, net_param_count(n));
    for (int t = 0; t < n->ntensors; t++) {
        const tensor *x = &n->tensors[t];
        fprintf(f, "tensor %d %s ", t, x->name);
        dump_shape(f, x->s);
        fprintf(f, " bytes %zu producer %d consumers %d grad %d\n", shape_count(x->s) * 4,
                x->producer, x->nconsumers, x->needs_diff);
    }
    for (int p = 0; p < n->nparams; p++) {
        const param *q = &n->params[p];
        fprintf(f, "param %d %s ", p, q->name);
        for (int d = 0; d < q->ndims; d++)
            fprintf(f, "%s%d", d ? "x" : "", q->dims[d]);
        fprintf(f, " bytes %zu\n", q->count * 4);
    }
    for (int i = 0; i < n->nlayers; i++) {
        const layer *l = &n->layers[i];
        fprintf(f, "layer %d %s %s in", i, layer_type_name(l->type), l->name);
        if (l->nin == 0)
            fprintf(f, " -");
        for (int k = 0; k < l->nin; k++)
            fprintf(f, "%s%d", k ? "," : " ", l->in[k]);
        fprintf(f, " out %d shape ", l->out);
        dump_shape(f, n->tensors[l->out].s);
        fprintf(f, " params");
        if (l->nparam == 0)
            fprintf(f, " -");
        for (int k = 0; k < l->nparam; k++)
            fprintf(f, "%s%d", k ? "," : " ", l->param[k]);
        switch (l->type) {
        case L_CONV:
        case L_MAXPOOL:
        case L_AVGPOOL:
            fprintf(f, " kernel %dx%d stride %dx%d pad %dx%d", l->kh, l->kw, l->sh, l->sw, l->ph,
                    l->pw);
            break;
        case L_LRN:
            fprintf(f, " size %u alpha %g beta %g k %g", l->lrn_n, l->lrn_alpha, l->lrn_beta,
                    l->lrn_k);
            break;
        case L_DROPOUT:
            fprintf(f, " p %g", l->drop_p);
            break;
        default:
            break;
        }
        fprintf(f, "\n");
    }
    if (fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}
