/*
 * models.c — the networks the trainer knows, built in code and parameterised
 * by depth, width, batch and input size: AlexNet, VGG (16, 19 and the deep
 * vDNN variants), ResNet (CIFAR basic blocks, ImageNet basic/bottleneck and
 * deeper), an Inception-v4-style network and a DenseNet-style network.
 *
 * "width" is the network's base channel count (AlexNet's first convolution,
 * VGG's and ResNet's first stage, Inception's first stem convolution,
 * DenseNet's growth rate); every channel count scales with it, so small
 * widths give small, fast versions of the same graph for tests.
 */
#include "bench/sntrain/net.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Channel count c of the canonical network, scaled to the chosen width. */
static int scaled(int c, int width, int canonical_width)
{
    long v = (long)c * width / canonical_width;
    return v < 1 ? 1 : (int)v;
}

static int small_input(int input)
{
    return input <= 64;
}

int network_known(const char *kind)
{
    static const char *const kinds[] = {"alexnet", "vgg", "resnet", "inception", "densenet"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kind, kinds[i]) == 0)
            return 1;
    return 0;
}

void network_defaults(net_options *o)
{
    const char *k = o->kind;
    if (strcmp(k, "alexnet") == 0) {
        if (!o->input) o->input = 227;
        if (!o->depth) o->depth = 8;
        if (!o->width) o->width = 96;
        if (!o->batch) o->batch = 128;
    } else if (strcmp(k, "vgg") == 0) {
        if (!o->input) o->input = 224;
        if (!o->depth) o->depth = 16;
        if (!o->width) o->width = 64;
        if (!o->batch) o->batch = 64;
    } else if (strcmp(k, "resnet") == 0) {
        if (!o->input) o->input = 224;
        int cifar = small_input(o->input);
        if (!o->depth) o->depth = cifar ? 56 : 50;
        if (!o->width) o->width = cifar ? 16 : 64;
        if (!o->batch) o->batch = cifar ? 128 : 32;
    } else if (strcmp(k, "inception") == 0) {
        if (!o->input) o->input = 299;
        if (!o->depth) o->depth = 14;
        if (!o->width) o->width = 32;
        if (!o->batch) o->batch = 32;
    } else if (strcmp(k, "densenet") == 0) {
        if (!o->input) o->input = 224;
        int cifar = small_input(o->input);
        if (!o->depth) o->depth = cifar ? 100 : 121;
        if (!o->width) o->width = cifar ? 12 : 32;
        if (!o->batch) o->batch = cifar ? 64 : 32;
    }
    if (!o->classes) o->classes = small_input(o->input) ? 10 : 1000;
}

static void name2(char *buf, size_t cap, const char *a, const char *b)
{
    net_name(buf, cap, "%s.%s", a, b);
}

/* conv (no bias) -> batch norm -> optional ReLU, the unit of the BN nets. */
static int conv_bn(net *n, const char *name, int in, int cout, int kh, int kw, int sh, int sw,
                   int ph, int pw, int relu)
{
    char b[64];
    int t = net_conv(n, name, in, cout, kh, kw, sh, sw, ph, pw, 0);
    name2(b, sizeof b, name, "bn");
    t = net_bn(n, b, t);
    if (relu) {
        name2(b, sizeof b, name, "relu");
        t = net_relu(n, b, t);
    }
    return t;
}

static int conv_bn_relu(net *n, const char *name, int in, int cout, int k, int stride, int pad)
{
    return conv_bn(n, name, in, cout, k, k, stride, stride, pad, pad, 1);
}

/* ---- AlexNet (Caffe's bvlc_alexnet, without groups) -------------------- */

static int build_alexnet(net *n, const net_options *o)
{
    if (o->depth != 8) {
        fprintf(stderr, "sntrain: alexnet has depth 8 only\n");
        return -1;
    }
    int w = o->width;
#define A(c) scaled(c, w, 96)
    snprintf(n->variant, sizeof n->variant, "alexnet");
    int t = n->data_tensor;
    t = net_conv(n, "conv1", t, A(96), 11, 11, 4, 4, 0, 0, 1);
    t = net_relu(n, "relu1", t);
    t = net_lrn(n, "norm1", t, 5, 1e-4, 0.75, 2.0);
    t = net_pool(n, "pool1", t, 1, 3, 2, 0);
    t = net_conv(n, "conv2", t, A(256), 5, 5, 1, 1, 2, 2, 1);
    t = net_relu(n, "relu2", t);
    t = net_lrn(n, "norm2", t, 5, 1e-4, 0.75, 2.0);
    t = net_pool(n, "pool2", t, 1, 3, 2, 0);
    t = net_conv(n, "conv3", t, A(384), 3, 3, 1, 1, 1, 1, 1);
    t = net_relu(n, "relu3", t);
    t = net_conv(n, "conv4", t, A(384), 3, 3, 1, 1, 1, 1, 1);
    t = net_relu(n, "relu4", t);
    t = net_conv(n, "conv5", t, A(256), 3, 3, 1, 1, 1, 1, 1);
    t = net_relu(n, "relu5", t);
    t = net_pool(n, "pool5", t, 1, 3, 2, 0);
    t = net_fc(n, "fc6", t, A(4096), 0);
    t = net_relu(n, "relu6", t);
    t = net_dropout(n, "drop6", t, 0.5f);
    t = net_fc(n, "fc7", t, A(4096), 0);
    t = net_relu(n, "relu7", t);
    t = net_dropout(n, "drop7", t, 0.5f);
#undef A
    return t;
}

/* ---- VGG ---------------------------------------------------------------- */

/* Convolutions per group: VGG-16 is 2,2,3,3,3 and VGG-19 2,2,4,4,4 (13/16
 * convolutions + 3 FC). Other depths D >= 8 keep VGG-16's groups and spread
 * D-16 more convolutions evenly over the five groups, later groups first:
 * VGG-116/216/316/416 (the vDNN paper's deep variants) get 20/40/60/80 more
 * per group. Smaller D take convolutions away from the early groups. */
static int vgg_groups(int depth, int groups[5])
{
    static const int base16[5] = {2, 2, 3, 3, 3};
    static const int base19[5] = {2, 2, 4, 4, 4};
    if (depth < 8)
        return -1;
    if (depth == 19) {
        memcpy(groups, base19, sizeof base19);
        return 0;
    }
    memcpy(groups, base16, sizeof base16);
    int extra = depth - 16;
    for (int g = 0; g < 5; g++)
        groups[g] += extra / 5;
    for (int g = 4; g >= 5 - (extra % 5 + 5) % 5 && extra > 0; g--)
        groups[g]++;
    if (extra < 0) {
        for (int g = 0; g < 5; g++)
            groups[g] = base16[g];
        int remove = -extra;
        for (int g = 0; remove > 0; g = (g + 1) % 5)
            if (groups[g] > 1) {
                groups[g]--;
                remove--;
            }
    }
    return 0;
}

static int build_vgg(net *n, const net_options *o)
{
    int groups[5];
    if (vgg_groups(o->depth, groups) != 0) {
        fprintf(stderr, "sntrain: vgg needs --depth 8 or more\n");
        return -1;
    }
    int w = o->width;
    static const int chans[5] = {64, 128, 256, 512, 512};
    snprintf(n->variant, sizeof n->variant, "vgg-%d (%d-%d-%d-%d-%d)", o->depth, groups[0],
             groups[1], groups[2], groups[3], groups[4]);
    int t = n->data_tensor;
    char b[64];
    for (int g = 0; g < 5; g++) {
        for (int i = 0; i < groups[g]; i++) {
            net_name(b, sizeof b, "conv%d_%d", g + 1, i + 1);
            t = net_conv(n, b, t, scaled(chans[g], w, 64), 3, 3, 1, 1, 1, 1, 1);
            net_name(b, sizeof b, "relu%d_%d", g + 1, i + 1);
            t = net_relu(n, b, t);
        }
        net_name(b, sizeof b, "pool%d", g + 1);
        t = net_pool(n, b, t, 1, 2, 2, 0);
    }
    t = net_fc(n, "fc6", t, scaled(4096, w, 64), 0);
    t = net_relu(n, "relu6", t);
    t = net_dropout(n, "drop6", t, 0.5f);
    t = net_fc(n, "fc7", t, scaled(4096, w, 64), 0);
    t = net_relu(n, "relu7", t);
    t = net_dropout(n, "drop7", t, 0.5f);
    return t;
}

/* ---- ResNet ------------------------------------------------------------- */

static int basic_block(net *n, const char *name, int in, int cout, int stride)
{
    char b[64];
    shape x = n->tensors[in].s;
    net_name(b, sizeof b, "%s.conv1", name);
    int t = conv_bn_relu(n, b, in, cout, 3, stride, 1);
    net_name(b, sizeof b, "%s.conv2", name);
    t = conv_bn(n, b, t, cout, 3, 3, 1, 1, 1, 1, 0);
    int shortcut = in;
    if (stride != 1 || x.c != cout) {
        net_name(b, sizeof b, "%s.proj", name);
        shortcut = conv_bn(n, b, in, cout, 1, 1, stride, stride, 0, 0, 0);
    }
    net_name(b, sizeof b, "%s.add", name);
    t = net_add(n, b, t, shortcut);
    net_name(b, sizeof b, "%s.relu", name);
    return net_relu(n, b, t);
}

/* Caffe's ResNet bottleneck: the stride sits in the first 1x1 convolution. */
static int bottleneck_block(net *n, const char *name, int in, int mid, int cout, int stride)
{
    char b[64];
    shape x = n->tensors[in].s;
    net_name(b, sizeof b, "%s.conv1", name);
    int t = conv_bn_relu(n, b, in, mid, 1, stride, 0);
    net_name(b, sizeof b, "%s.conv2", name);
    t = conv_bn_relu(n, b, t, mid, 3, 1, 1);
    net_name(b, sizeof b, "%s.conv3", name);
    t = conv_bn(n, b, t, cout, 1, 1, 1, 1, 0, 0, 0);
    int shortcut = in;
    if (stride != 1 || x.c != cout) {
        net_name(b, sizeof b, "%s.proj", name);
        shortcut = conv_bn(n, b, in, cout, 1, 1, stride, stride, 0, 0, 0);
    }
    net_name(b, sizeof b, "%s.add", name);
    t = net_add(n, b, t, shortcut);
    net_name(b, sizeof b, "%s.relu", name);
    return net_relu(n, b, t);
}

static int build_resnet(net *n, const net_options *o)
{
    int w = o->width, d = o->depth;
    char b[64];
    if (small_input(o->input)) {
        /* CIFAR ResNet (He et al. 2016, section 4.2): depth 6n+2, three
         * stages of n basic blocks at 16/32/64 channels. */
        if (d < 8 || (d - 2) % 6 != 0) {
            fprintf(stderr, "sntrain: CIFAR-size resnet needs --depth 6n+2 (8, 14, 20, 32, 56, "
                            "110, ...)\n");
            return -1;
        }
        int per_stage = (d - 2) / 6;
        snprintf(n->variant, sizeof n->variant, "resnet-%d cifar (%d basic blocks per stage)", d,
                 per_stage);
        int t = conv_bn_relu(n, "conv1", n->data_tensor, scaled(16, w, 16), 3, 1, 1);
        for (int s = 0; s < 3; s++)
            for (int i = 0; i < per_stage; i++) {
                net_name(b, sizeof b, "stage%d.block%d", s + 1, i + 1);
                t = basic_block(n, b, t, scaled(16 << s, w, 16), (s > 0 && i == 0) ? 2 : 1);
            }
        return net_global_avgpool(n, "pool", t);
    }
    /* ImageNet ResNet: 18/34 basic, 50/101/152 bottleneck. Any other depth
     * 3k+2 >= 56 is a bottleneck network with stages {3, 8, N, 3} and
     * N = (D-2)/3 - 14, the way SuperNeurons builds its very deep ResNets
     * (ResNet-152 has N = 36; ResNet-1920 is 3*(14+625)+2 = 1919 layers). */
    int stages[4];
    int bottleneck = 1;
    if (d == 18) {
        int s[4] = {2, 2, 2, 2};
        memcpy(stages, s, sizeof s);
        bottleneck = 0;
    } else if (d == 34) {
        int s[4] = {3, 4, 6, 3};
        memcpy(stages, s, sizeof s);
        bottleneck = 0;
    } else if (d == 50) {
        int s[4] = {3, 4, 6, 3};
        memcpy(stages, s, sizeof s);
    } else if (d == 101) {
        int s[4] = {3, 4, 23, 3};
        memcpy(stages, s, sizeof s);
    } else if (d >= 56 && (d - 2) % 3 == 0) {
        int s[4] = {3, 8, (d - 2) / 3 - 14, 3};
        memcpy(stages, s, sizeof s);
    } else if (d >= 56) {
        int s[4] = {3, 8, (d - 2) / 3 - 14, 3};
        memcpy(stages, s, sizeof s);
        fprintf(stderr, "sntrain: resnet depth %d is not 3k+2; building %d\n", d,
                3 * (14 + s[2]) + 2);
    } else {
        fprintf(stderr, "sntrain: ImageNet-size resnet needs --depth 18, 34, 50, 101, 152 or "
                        "any 3k+2 >= 56\n");
        return -1;
    }
    snprintf(n->variant, sizeof n->variant, "resnet-%d imagenet %s (%d-%d-%d-%d)", d,
             bottleneck ? "bottleneck" : "basic", stages[0], stages[1], stages[2], stages[3]);
    int t = conv_bn_relu(n, "conv1", n->data_tensor, scaled(64, w, 64), 7, 2, 3);
    t = net_pool(n, "pool1", t, 1, 3, 2, 1);
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < stages[s]; i++) {
            net_name(b, sizeof b, "res%d.%d", s + 2, i + 1);
            int stride = (s > 0 && i == 0) ? 2 : 1;
            if (bottleneck)
                t = bottleneck_block(n, b, t, scaled(64 << s, w, 64), scaled(256 << s, w, 64),
                                     stride);
            else
                t = basic_block(n, b, t, scaled(64 << s, w, 64), stride);
        }
    return net_global_avgpool(n, "pool5", t);
}

/* ---- Inception-v4 style (Szegedy et al. 2017) -------------------------- */

typedef struct incep {
    net *n;
    int w;
    const char *block;
} incep;

static int ic(const incep *c, int ch)
{
    return scaled(ch, c->w, 32);
}

/* One convolution unit of a branch: conv -> BN -> ReLU, named block.tag. */
static int iconv(const incep *c, const char *tag, int in, int ch, int kh, int kw, int stride,
                 int valid)
{
    char b[64];
    net_name(b, sizeof b, "%s.%s", c->block, tag);
    int ph = valid ? 0 : kh / 2, pw = valid ? 0 : kw / 2;
    return conv_bn(c->n, b, in, ic(c, ch), kh, kw, stride, stride, ph, pw, 1);
}

static int ipool(const incep *c, const char *tag, int in, int max, int stride, int valid)
{
    char b[64];
    net_name(b, sizeof b, "%s.%s", c->block, tag);
    return net_pool(c->n, b, in, max, 3, stride, valid ? 0 : 1);
}

static int ijoin(const incep *c, const int *ins, int nin)
{
    char b[64];
    net_name(b, sizeof b, "%s.concat", c->block);
    return net_concat(c->n, b, ins, nin);
}

static int inception_a(incep *c, int in)
{
    int br[4];
    br[0] = iconv(c, "b1.conv", ipool(c, "b1.pool", in, 0, 1, 0), 96, 1, 1, 1, 0);
    br[1] = iconv(c, "b2.conv", in, 96, 1, 1, 1, 0);
    br[2] = iconv(c, "b3.conv2", iconv(c, "b3.conv1", in, 64, 1, 1, 1, 0), 96, 3, 3, 1, 0);
    int t = iconv(c, "b4.conv1", in, 64, 1, 1, 1, 0);
    t = iconv(c, "b4.conv2", t, 96, 3, 3, 1, 0);
    br[3] = iconv(c, "b4.conv3", t, 96, 3, 3, 1, 0);
    return ijoin(c, br, 4);
}

static int reduction_a(incep *c, int in)
{
    int br[3];
    br[0] = ipool(c, "b1.pool", in, 1, 2, 1);
    br[1] = iconv(c, "b2.conv", in, 384, 3, 3, 2, 1);
    int t = iconv(c, "b3.conv1", in, 192, 1, 1, 1, 0);
    t = iconv(c, "b3.conv2", t, 224, 3, 3, 1, 0);
    br[2] = iconv(c, "b3.conv3", t, 256, 3, 3, 2, 1);
    return ijoin(c, br, 3);
}

static int inception_b(incep *c, int in)
{
    int br[4];
    br[0] = iconv(c, "b1.conv", ipool(c, "b1.pool", in, 0, 1, 0), 128, 1, 1, 1, 0);
    br[1] = iconv(c, "b2.conv", in, 384, 1, 1, 1, 0);
    int t = iconv(c, "b3.conv1", in, 192, 1, 1, 1, 0);
    t = iconv(c, "b3.conv2", t, 224, 1, 7, 1, 0);
    br[2] = iconv(c, "b3.conv3", t, 256, 7, 1, 1, 0);
    t = iconv(c, "b4.conv1", in, 192, 1, 1, 1, 0);
    t = iconv(c, "b4.conv2", t, 192, 1, 7, 1, 0);
    t = iconv(c, "b4.conv3", t, 224, 7, 1, 1, 0);
    t = iconv(c, "b4.conv4", t, 224, 1, 7, 1, 0);
    br[3] = iconv(c, "b4.conv5", t, 256, 7, 1, 1, 0);
    return ijoin(c, br, 4);
}

static int reduction_b(incep *c, int in)
{
    int br[3];
    br[0] = ipool(c, "b1.pool", in, 1, 2, 1);
    br[1] = iconv(c, "b2.conv2", iconv(c, "b2.conv1", in, 192, 1, 1, 1, 0), 192, 3, 3, 2, 1);
    int t = iconv(c, "b3.conv1", in, 256, 1, 1, 1, 0);
    t = iconv(c, "b3.conv2", t, 256, 1, 7, 1, 0);
    t = iconv(c, "b3.conv3", t, 320, 7, 1, 1, 0);
    br[2] = iconv(c, "b3.conv4", t, 320, 3, 3, 2, 1);
    return ijoin(c, br, 3);
}

/* Inception-C: two of its four branches fork again into a 1x3 and a 3x1
 * convolution, so the join has six inputs. */
static int inception_c(incep *c, int in)
{
    int br[6];
    br[0] = iconv(c, "b1.conv", ipool(c, "b1.pool", in, 0, 1, 0), 256, 1, 1, 1, 0);
    br[1] = iconv(c, "b2.conv", in, 256, 1, 1, 1, 0);
    int t = iconv(c, "b3.conv1", in, 384, 1, 1, 1, 0);
    br[2] = iconv(c, "b3.conv2a", t, 256, 1, 3, 1, 0);
    br[3] = iconv(c, "b3.conv2b", t, 256, 3, 1, 1, 0);
    t = iconv(c, "b4.conv1", in, 384, 1, 1, 1, 0);
    t = iconv(c, "b4.conv2", t, 448, 3, 1, 1, 0);
    t = iconv(c, "b4.conv3", t, 512, 1, 3, 1, 0);
    br[4] = iconv(c, "b4.conv4a", t, 256, 1, 3, 1, 0);
    br[5] = iconv(c, "b4.conv4b", t, 256, 3, 1, 1, 0);
    return ijoin(c, br, 6);
}

static int inception_stem(incep *c, int in, int full)
{
    c->block = "stem";
    int t, br[2];
    if (full) {
        t = iconv(c, "conv1", in, 32, 3, 3, 2, 1);
        t = iconv(c, "conv2", t, 32, 3, 3, 1, 1);
        t = iconv(c, "conv3", t, 64, 3, 3, 1, 0);
        br[0] = ipool(c, "pool4", t, 1, 2, 1);
        br[1] = iconv(c, "conv4", t, 96, 3, 3, 2, 1);
        c->block = "stem.join1";
        t = ijoin(c, br, 2);
        c->block = "stem";
        br[0] = iconv(c, "b1.conv2", iconv(c, "b1.conv1", t, 64, 1, 1, 1, 0), 96, 3, 3, 1, 1);
        int u = iconv(c, "b2.conv1", t, 64, 1, 1, 1, 0);
        u = iconv(c, "b2.conv2", u, 64, 7, 1, 1, 0);
        u = iconv(c, "b2.conv3", u, 64, 1, 7, 1, 0);
        br[1] = iconv(c, "b2.conv4", u, 96, 3, 3, 1, 1);
        c->block = "stem.join2";
        t = ijoin(c, br, 2);
        c->block = "stem";
        br[0] = iconv(c, "conv5", t, 192, 3, 3, 2, 1);
        br[1] = ipool(c, "pool5", t, 1, 2, 1);
        c->block = "stem.join3";
        return ijoin(c, br, 2);
    }
    /* Inputs too small for the full stem's three stride-2 steps keep their
     * resolution but the same fork-join shape and the 384 output channels. */
    t = iconv(c, "conv1", in, 32, 3, 3, 1, 0);
    t = iconv(c, "conv2", t, 64, 3, 3, 1, 0);
    br[0] = ipool(c, "pool3", t, 1, 1, 0);
    br[1] = iconv(c, "conv3", t, 96, 3, 3, 1, 0);
    c->block = "stem.join1";
    t = ijoin(c, br, 2);
    c->block = "stem";
    return iconv(c, "conv4", t, 384, 1, 1, 1, 0);
}

static int build_inception(net *n, const net_options *o)
{
    int d = o->depth;
    if (d < 3) {
        fprintf(stderr, "sntrain: inception needs --depth 3 or more (Inception blocks)\n");
        return -1;
    }
    /* depth = number of Inception blocks, split 4:7:3 as in Inception-v4. */
    int na = d * 4 / 14, nb = d * 7 / 14;
    if (na < 1) na = 1;
    if (nb < 1) nb = 1;
    int nc = d - na - nb;
    if (nc < 1) nc = 1;
    int full = o->input >= 75;
    snprintf(n->variant, sizeof n->variant, "inception-v4 style %dA-%dB-%dC %s stem", na, nb, nc,
             full ? "full" : "small");
    incep c = {n, o->width, NULL};
    int t = inception_stem(&c, n->data_tensor, full);
    char b[64];
    for (int i = 0; i < na; i++) {
        net_name(b, sizeof b, "incA%d", i + 1);
        c.block = b;
        t = inception_a(&c, t);
    }
    c.block = "redA";
    t = reduction_a(&c, t);
    for (int i = 0; i < nb; i++) {
        net_name(b, sizeof b, "incB%d", i + 1);
        c.block = b;
        t = inception_b(&c, t);
    }
    c.block = "redB";
    t = reduction_b(&c, t);
    for (int i = 0; i < nc; i++) {
        net_name(b, sizeof b, "incC%d", i + 1);
        c.block = b;
        t = inception_c(&c, t);
    }
    t = net_global_avgpool(n, "pool", t);
    return net_dropout(n, "drop", t, 0.2f);
}

/* ---- DenseNet-BC style (Huang et al. 2017) ------------------------------ */

/* One dense block with full joins: layer i reads the concatenation of the
 * block input and all i-1 earlier layers' outputs. Returns the block output
 * (everything concatenated). */
static int dense_block(net *n, const char *name, int in, int layers, int growth)
{
    int *feats = malloc(sizeof(int) * (size_t)(layers + 1));
    feats[0] = in;
    char b[64];
    int t = in;
    for (int i = 0; i < layers; i++) {
        if (i > 0) {
            net_name(b, sizeof b, "%s.l%d.concat", name, i + 1);
            t = net_concat(n, b, feats, i + 1);
        }
        net_name(b, sizeof b, "%s.l%d.bn1", name, i + 1);
        t = net_bn(n, b, t);
        net_name(b, sizeof b, "%s.l%d.relu1", name, i + 1);
        t = net_relu(n, b, t);
        net_name(b, sizeof b, "%s.l%d.conv1", name, i + 1);
        t = net_conv(n, b, t, 4 * growth, 1, 1, 1, 1, 0, 0, 0);
        net_name(b, sizeof b, "%s.l%d.bn2", name, i + 1);
        t = net_bn(n, b, t);
        net_name(b, sizeof b, "%s.l%d.relu2", name, i + 1);
        t = net_relu(n, b, t);
        net_name(b, sizeof b, "%s.l%d.conv2", name, i + 1);
        feats[i + 1] = net_conv(n, b, t, growth, 3, 3, 1, 1, 1, 1, 0);
    }
    net_name(b, sizeof b, "%s.concat", name);
    t = net_concat(n, b, feats, layers + 1);
    free(feats);
    return t;
}

static int transition(net *n, const char *name, int in)
{
    char b[64];
    int c = n->tensors[in].s.c / 2;
    net_name(b, sizeof b, "%s.bn", name);
    int t = net_bn(n, b, in);
    net_name(b, sizeof b, "%s.relu", name);
    t = net_relu(n, b, t);
    net_name(b, sizeof b, "%s.conv", name);
    t = net_conv(n, b, t, c < 1 ? 1 : c, 1, 1, 1, 1, 0, 0, 0);
    net_name(b, sizeof b, "%s.pool", name);
    return net_pool(n, b, t, 0, 2, 2, 0);
}

static int build_densenet(net *n, const net_options *o)
{
    int d = o->depth, k = o->width;
    int blocks[4], nblocks;
    int t;
    if (small_input(o->input)) {
        /* DenseNet-BC for CIFAR: depth 6n+4, three blocks of n layers. */
        if (d < 10 || (d - 4) % 6 != 0) {
            fprintf(stderr, "sntrain: CIFAR-size densenet needs --depth 6n+4 (10, 16, 40, 100, "
                            "...)\n");
            return -1;
        }
        nblocks = 3;
        blocks[0] = blocks[1] = blocks[2] = (d - 4) / 6;
        snprintf(n->variant, sizeof n->variant, "densenet-bc-%d cifar k=%d (%d per block)", d, k,
                 blocks[0]);
        t = net_conv(n, "conv0", n->data_tensor, 2 * k, 3, 3, 1, 1, 1, 1, 0);
    } else {
        /* ImageNet DenseNet-BC: 121/169/201/264; other odd depths >= 121
         * grow the third block: {6, 12, (D-5)/2 - 34, 16}. */
        nblocks = 4;
        int b0[4] = {6, 12, 24, 16};
        if (d == 169) b0[2] = 32, b0[3] = 32;
        else if (d == 201) b0[2] = 48, b0[3] = 32;
        else if (d == 264) b0[2] = 64, b0[3] = 48;
        else if (d != 121) {
            if (d < 77 || (d - 5) % 2 != 0) {
                fprintf(stderr, "sntrain: ImageNet-size densenet needs --depth 121, 169, 201, "
                                "264 or an odd depth >= 77\n");
                return -1;
            }
            b0[2] = (d - 5) / 2 - 34;
        }
        memcpy(blocks, b0, sizeof b0);
        snprintf(n->variant, sizeof n->variant, "densenet-bc-%d imagenet k=%d (%d-%d-%d-%d)", d,
                 k, blocks[0], blocks[1], blocks[2], blocks[3]);
        t = conv_bn_relu(n, "conv0", n->data_tensor, 2 * k, 7, 2, 3);
        t = net_pool(n, "pool0", t, 1, 3, 2, 1);
    }
    char b[64];
    for (int i = 0; i < nblocks; i++) {
        net_name(b, sizeof b, "dense%d", i + 1);
        t = dense_block(n, b, t, blocks[i], k);
        if (i + 1 < nblocks) {
            net_name(b, sizeof b, "trans%d", i + 1);
            t = transition(n, b, t);
        }
    }
    t = net_bn(n, "final.bn", t);
    t = net_relu(n, "final.relu", t);
    return net_global_avgpool(n, "pool", t);
}

net *build_network(const net_options *opt)
{
    net_options o = *opt;
    network_defaults(&o);
    if (o.batch < 1 || o.input < 1 || o.width < 1 || o.classes < 2) {
        fprintf(stderr, "sntrain: --batch, --input and --width must be positive and --classes "
                        "at least 2\n");
        return NULL;
    }
    net *n = net_new(o.kind, (shape){o.batch, 3, o.input, o.input}, o.classes);
    n->depth = o.depth;
    n->width = o.width;
    int t;
    if (strcmp(o.kind, "alexnet") == 0)
        t = build_alexnet(n, &o);
    else if (strcmp(o.kind, "vgg") == 0)
        t = build_vgg(n, &o);
    else if (strcmp(o.kind, "resnet") == 0)
        t = build_resnet(n, &o);
    else if (strcmp(o.kind, "inception") == 0)
        t = build_inception(n, &o);
    else if (strcmp(o.kind, "densenet") == 0)
        t = build_densenet(n, &o);
    else {
        fprintf(stderr, "sntrain: unknown network %s\n", o.kind);
        t = -1;
    }
    if (t < 0) {
        net_free(n);
        return NULL;
    }
    /* The classifier: small initial logits so the first loss is close to
     * ln(classes) whatever the depth. */
    shape f = n->tensors[t].s;
    t = net_fc(n, "classifier", t, o.classes, (float)(0.1 * sqrt(3.0 / (f.c * f.h * f.w))));
    net_softmax_loss(n, "loss", t);
    if (net_finish(n) != 0) {
        net_free(n);
        return NULL;
    }
    return n;
}
