#!/usr/bin/env python3
"""The Caffe test's nets (tests/test_caffe.sh; docs/caffe.md, "The test").

    nets.py DIR [NAME...]

writes, for each net named (all of them without a name), DIR/NAME.prototxt
and its solver DIR/NAME.solver.prototxt, and for the data-layer variants
the input their data layer reads, as raw records that tests/caffe/mkdata.c
stores (DIR/lmdb.records into the LMDB DIR/lmdb, DIR/hdf5.raw into the
HDF5 file DIR/hdf5.h5, which the list DIR/hdf5.list names). It
prints one JSON object on stdout: per net, its training-phase layers in
Caffe's order, each {name, type, bottoms, tops} plus the parameter that
decides what a layer computes where Caffe's type alone does not (pool:
MAX or AVE; operation: Eltwise's), which tests/caffe/layers.py compares
with libsn's trace report. Layers included only in the TEST phase are left
out of the list: they run in the evaluation pass, not in the iteration
libsn learns.

Every net is small (batch 8 to 16, images of 3x32x32 or less) so that a
six-iteration run takes a fraction of a second on the simulator with
compute off, yet its activations are several times the libraries' own
memory, so that a half and a third of its peak make libsn move memory.
Python 3, standard library only.
"""
import json
import os
import random
import struct
import sys

ITERS = int(os.environ.get("CAFFE_ITERS", "6"))


class Net:
    def __init__(self, name):
        self.name = name
        self.layers = []  # (name, type, bottoms, tops, body, phase, extra)
        self.solver = []  # extra solver lines (test_iter, test_interval)
        self.data = {}  # file name -> bytes the test stores (mkdata.c)

    def add(self, name, type_, bottoms, tops, body="", phase=None, **extra):
        self.layers.append((name, type_, list(bottoms), list(tops), body, phase, extra))
        return tops[0] if tops else None

    def prototxt(self):
        out = ['name: "%s"' % self.name]
        for name, type_, bottoms, tops, body, phase, _ in self.layers:
            s = 'layer { name: "%s" type: "%s"' % (name, type_)
            s += "".join(' bottom: "%s"' % b for b in bottoms)
            s += "".join(' top: "%s"' % t for t in tops)
            if phase:
                s += " include { phase: %s }" % phase
            if body:
                s += "\n  " + body
            out.append(s + " }")
        return "\n".join(out) + "\n"

    def expected(self):
        return [dict({"name": n, "type": t, "bottoms": b, "tops": tp}, **x)
                for n, t, b, tp, _, ph, x in self.layers if ph != "TEST"]


# ---- layer helpers: each adds one Caffe layer and returns its (first) top

XAVIER = 'weight_filler { type: "xavier" }'
MSRA = 'weight_filler { type: "msra" }'


def dummy(net, batch, c, h, w, classes=10, phase=None, name="data"):
    return net.add(name, "DummyData", [], ["data", "label"],
                   "dummy_data_param {\n"
                   "    shape { dim: %d dim: %d dim: %d dim: %d } data_filler { type: \"gaussian\" std: 1 }\n"
                   "    shape { dim: %d } data_filler { type: \"uniform\" min: 0 max: %d } }"
                   % (batch, c, h, w, batch, classes - 1), phase)


def conv(net, name, bottom, n, k, stride=1, pad=None, group=1, bias=True, filler=XAVIER, type_="Convolution"):
    if pad is None:
        pad = k // 2
    p = "num_output: %d kernel_size: %d" % (n, k)
    if stride != 1:
        p += " stride: %d" % stride
    if pad:
        p += " pad: %d" % pad
    if group != 1:
        p += " group: %d" % group
    if not bias:
        p += " bias_term: false"
    return net.add(name, type_, [bottom], [name], "convolution_param { %s %s }" % (p, filler))


def relu(net, name, blob):
    return net.add(name, "ReLU", [blob], [blob])


def pool(net, name, bottom, method, k, stride, pad=0, global_=False):
    if global_:
        p = "pool: %s global_pooling: true" % method
    else:
        p = "pool: %s kernel_size: %d stride: %d" % (method, k, stride) + (" pad: %d" % pad if pad else "")
    return net.add(name, "Pooling", [bottom], [name], "pooling_param { %s }" % p, pool=method)


def ip(net, name, bottom, n):
    return net.add(name, "InnerProduct", [bottom], [name],
                   "inner_product_param { num_output: %d %s }" % (n, XAVIER))


def dropout(net, name, blob, ratio=0.5):
    return net.add(name, "Dropout", [blob], [blob], "dropout_param { dropout_ratio: %g }" % ratio)


def lrn(net, name, bottom):
    return net.add(name, "LRN", [bottom], [name], "lrn_param { local_size: 5 alpha: 0.0001 beta: 0.75 }")


def softmax_loss(net, bottom, label="label"):
    return net.add("loss", "SoftmaxWithLoss", [bottom, label], ["loss"])


def bn_scale(net, prefix, blob):
    """Caffe's batch normalisation: BatchNorm then Scale with a bias, both
    in place (ResNet's prototxt)."""
    net.add("bn_" + prefix, "BatchNorm", [blob], [blob])
    net.add("scale_" + prefix, "Scale", [blob], [blob], "scale_param { bias_term: true }")
    return blob


# ---- the nets


def tiny():
    """Nine layers: every kind the cuDNN engine takes over (convolution,
    ReLU, pooling, softmax) plus cuBLAS's inner products and cuRAND's
    dropout."""
    net = Net("tiny")
    x = dummy(net, 16, 3, 32, 32)
    x = conv(net, "conv1", x, 16, 3)
    relu(net, "relu1", x)
    x = pool(net, "pool1", x, "MAX", 2, 2)
    x = ip(net, "ip1", x, 64)
    relu(net, "relu2", x)
    dropout(net, "drop1", x)
    x = ip(net, "ip2", x, 10)
    softmax_loss(net, x)
    return net


def lenet():
    """LeNet on MNIST-sized images: convolution, max pooling, convolution,
    max pooling, inner product, ReLU, inner product, softmax loss."""
    net = Net("lenet")
    x = dummy(net, 16, 1, 28, 28)
    x = conv(net, "conv1", x, 20, 5, pad=0)
    x = pool(net, "pool1", x, "MAX", 2, 2)
    x = conv(net, "conv2", x, 50, 5, pad=0)
    x = pool(net, "pool2", x, "MAX", 2, 2)
    x = ip(net, "ip1", x, 500)
    relu(net, "relu1", x)
    x = ip(net, "ip2", x, 10)
    softmax_loss(net, x)
    return net


def cifar():
    """CIFAR-10 quick: convolution, max pooling, ReLU; convolution, ReLU,
    average pooling (twice); two inner products. The TEST phase has its
    own data layer (another batch size) and an Accuracy layer; the solver
    evaluates every test_interval iterations (and before the first and
    after the last), test_iter batches each time."""
    net = Net("cifar")
    dummy(net, 16, 3, 32, 32, phase="TRAIN")
    x = dummy(net, 8, 3, 32, 32, phase="TEST")
    x = conv(net, "conv1", x, 32, 5)
    x = pool(net, "pool1", x, "MAX", 3, 2)
    relu(net, "relu1", x)
    x = conv(net, "conv2", x, 32, 5)
    relu(net, "relu2", x)
    x = pool(net, "pool2", x, "AVE", 3, 2)
    x = conv(net, "conv3", x, 64, 5)
    relu(net, "relu3", x)
    x = pool(net, "pool3", x, "AVE", 3, 2)
    x = ip(net, "ip1", x, 64)
    x = ip(net, "ip2", x, 10)
    net.add("accuracy", "Accuracy", [x, "label"], ["accuracy"], phase="TEST")
    softmax_loss(net, x)
    net.solver += ["test_iter: 2", "test_interval: 3"]
    return net


def alexnet():
    """CaffeNet's shape scaled down to 32x32 images: local response
    normalisation after the first two poolings, convolutions in two groups
    (conv2, conv4, conv5: cuDNN runs each group on its own stream), and
    dropout after the first two inner products."""
    net = Net("alexnet")
    x = dummy(net, 8, 3, 32, 32)
    x = conv(net, "conv1", x, 32, 5)
    relu(net, "relu1", x)
    x = pool(net, "pool1", x, "MAX", 3, 2)
    x = lrn(net, "norm1", x)
    x = conv(net, "conv2", x, 64, 5, group=2)
    relu(net, "relu2", x)
    x = pool(net, "pool2", x, "MAX", 3, 2)
    x = lrn(net, "norm2", x)
    x = conv(net, "conv3", x, 96, 3)
    relu(net, "relu3", x)
    x = conv(net, "conv4", x, 96, 3, group=2)
    relu(net, "relu4", x)
    x = conv(net, "conv5", x, 64, 3, group=2)
    relu(net, "relu5", x)
    x = pool(net, "pool5", x, "MAX", 3, 2)
    x = ip(net, "fc6", x, 256)
    relu(net, "relu6", x)
    dropout(net, "drop6", x)
    x = ip(net, "fc7", x, 256)
    relu(net, "relu7", x)
    dropout(net, "drop7", x)
    x = ip(net, "fc8", x, 10)
    softmax_loss(net, x)
    return net


def inception():
    """A GoogLeNet stem and one inception block: 1x1, 3x3 (after a 1x1
    reduction) and 5x5 (likewise) branches and a max-pooling branch with a
    1x1 projection, concatenated; global average pooling and an inner
    product."""
    net = Net("inception")
    x = dummy(net, 16, 3, 32, 32)
    x = conv(net, "conv1", x, 32, 3)
    relu(net, "conv1_relu", x)
    x = pool(net, "pool1", x, "MAX", 3, 2)
    p = "inception_3a/"
    b1 = conv(net, p + "1x1", x, 16, 1)
    relu(net, p + "relu_1x1", b1)
    r3 = conv(net, p + "3x3_reduce", x, 16, 1)
    relu(net, p + "relu_3x3_reduce", r3)
    b3 = conv(net, p + "3x3", r3, 32, 3)
    relu(net, p + "relu_3x3", b3)
    r5 = conv(net, p + "5x5_reduce", x, 8, 1)
    relu(net, p + "relu_5x5_reduce", r5)
    b5 = conv(net, p + "5x5", r5, 16, 5)
    relu(net, p + "relu_5x5", b5)
    bp = pool(net, p + "pool", x, "MAX", 3, 1, pad=1)
    bp = conv(net, p + "pool_proj", bp, 16, 1)
    relu(net, p + "relu_pool_proj", bp)
    x = net.add(p + "output", "Concat", [b1, b3, b5, bp], [p + "output"])
    x = pool(net, "pool5", x, "AVE", 0, 0, global_=True)
    x = ip(net, "loss3/classifier", x, 10)
    softmax_loss(net, x)
    return net


def resnet():
    """A ResNet stem and three residual blocks: each convolution followed by
    BatchNorm and Scale in place, ReLU in place, an Eltwise SUM of the
    block's two branches; the second block halves the resolution and has a
    projection shortcut (a strided 1x1 convolution), the others add their
    input."""
    net = Net("resnet")
    x = dummy(net, 16, 3, 32, 32)
    x = conv(net, "conv1", x, 16, 3, bias=False, filler=MSRA)
    bn_scale(net, "conv1", x)
    relu(net, "conv1_relu", x)
    for blk, (n, stride) in (("2a", (16, 1)), ("3a", (32, 2)), ("3b", (32, 1))):
        shortcut = x
        if stride != 1:
            shortcut = conv(net, "res%s_branch1" % blk, x, n, 1, stride=stride, pad=0, bias=False, filler=MSRA)
            bn_scale(net, "%s_branch1" % blk, shortcut)
        y = conv(net, "res%s_branch2a" % blk, x, n, 3, stride=stride, bias=False, filler=MSRA)
        bn_scale(net, "%s_branch2a" % blk, y)
        relu(net, "res%s_branch2a_relu" % blk, y)
        y = conv(net, "res%s_branch2b" % blk, y, n, 3, bias=False, filler=MSRA)
        bn_scale(net, "%s_branch2b" % blk, y)
        x = net.add("res" + blk, "Eltwise", [shortcut, y], ["res" + blk],
                    "eltwise_param { operation: SUM }", operation="SUM")
        relu(net, "res%s_relu" % blk, x)
    x = pool(net, "pool5", x, "AVE", 0, 0, global_=True)
    x = ip(net, "fc10", x, 10)
    softmax_loss(net, x)
    return net


def vgg():
    """VGG's shape: stacks of 3x3 convolutions with ReLU in place, each stack
    ending in 2x2 max pooling (two of two convolutions, one of three), then
    inner products with ReLU and dropout."""
    net = Net("vgg")
    x = dummy(net, 8, 3, 32, 32)
    for s, (n, reps) in enumerate(((16, 2), (32, 2), (64, 3)), 1):
        for r in range(1, reps + 1):
            x = conv(net, "conv%d_%d" % (s, r), x, n, 3)
            relu(net, "relu%d_%d" % (s, r), x)
        x = pool(net, "pool%d" % s, x, "MAX", 2, 2)
    x = ip(net, "fc6", x, 128)
    relu(net, "relu6", x)
    dropout(net, "drop6", x)
    x = ip(net, "fc7", x, 10)
    softmax_loss(net, x)
    return net


def deconv():
    """An encoder-decoder: strided convolutions down to 8x8, Deconvolution
    (cuDNN's, a transposed convolution: its forward pass is the backward
    data pass of a convolution) back up to 32x32, then a classifier."""
    net = Net("deconv")
    x = dummy(net, 16, 3, 32, 32)
    x = conv(net, "conv1", x, 16, 3, stride=2, pad=1)
    relu(net, "relu1", x)
    x = conv(net, "conv2", x, 32, 3, stride=2, pad=1)
    relu(net, "relu2", x)
    x = conv(net, "deconv1", x, 16, 4, stride=2, pad=1, type_="Deconvolution")
    relu(net, "relu3", x)
    x = conv(net, "deconv2", x, 8, 4, stride=2, pad=1, type_="Deconvolution")
    relu(net, "relu4", x)
    x = pool(net, "pool1", x, "MAX", 2, 2)
    x = ip(net, "ip1", x, 10)
    softmax_loss(net, x)
    return net


def body(net, x):
    """The data-layer variants' layers after the data: tiny's."""
    x = conv(net, "conv1", x, 32, 3)
    relu(net, "relu1", x)
    x = pool(net, "pool1", x, "MAX", 2, 2)
    x = conv(net, "conv2", x, 32, 3)
    relu(net, "relu2", x)
    x = pool(net, "pool2", x, "AVE", 2, 2)
    x = ip(net, "ip1", x, 64)
    relu(net, "relu3", x)
    x = ip(net, "ip2", x, 10)
    softmax_loss(net, x)


def datum(c, h, w, pixels, label):
    """Caffe's Datum message (caffe.proto): channels=1, height=2, width=3
    (varints), data=4 (bytes), label=5 (varint)."""
    def varint(v):
        out = bytearray()
        while True:
            b = v & 0x7F
            v >>= 7
            out.append(b | (0x80 if v else 0))
            if not v:
                return bytes(out)
    return (b"\x08" + varint(c) + b"\x10" + varint(h) + b"\x18" + varint(w) +
            b"\x22" + varint(len(pixels)) + pixels + b"\x28" + varint(label))


def lmdb():
    """Caffe's Data layer on an LMDB of Datum records (3x32x32 bytes and a
    label each), scaled to [0, 1) by the transformer: Caffe's prefetch
    thread fills pinned host batches and pushes them to the device on its
    own stream. There are more records than the run reads (six iterations,
    the final forward pass and the prefetch queue of four), so the reader
    never wraps around (it would log that from its own thread)."""
    net = Net("lmdb")
    x = net.add("data", "Data", [], ["data", "label"],
                'data_param { source: "@DIR@/lmdb" backend: LMDB batch_size: 16 }\n'
                "  transform_param { scale: 0.00390625 }")
    body(net, x)
    rng = random.Random(1)
    records = bytearray()
    for i in range(16 * (ITERS + 10)):
        key = b"%08d" % i
        val = datum(3, 32, 32, bytes(rng.randrange(256) for _ in range(3 * 32 * 32)), rng.randrange(10))
        records += struct.pack("<I", len(key)) + key + struct.pack("<I", len(val)) + val
    net.data["lmdb.records"] = bytes(records)
    return net


def hdf5():
    """HDF5Data on one file (a list file names it) of 64 images of 3x32x32
    floats and their labels, read whole when the net is set up and copied
    to the device batch by batch."""
    net = Net("hdf5")
    x = net.add("data", "HDF5Data", [], ["data", "label"],
                'hdf5_data_param { source: "@DIR@/hdf5.list" batch_size: 16 }')
    body(net, x)
    rng = random.Random(2)
    n, c, h, w = 64, 3, 32, 32
    raw = struct.pack("<4I", n, c, h, w)
    raw += struct.pack("<%df" % (n * c * h * w), *(rng.gauss(0, 1) for _ in range(n * c * h * w)))
    raw += struct.pack("<%df" % n, *(float(rng.randrange(10)) for _ in range(n)))
    net.data["hdf5.raw"] = raw
    net.data["hdf5.list"] = "@DIR@/hdf5.h5\n"
    return net


NETS = [tiny, lenet, cifar, alexnet, inception, resnet, vgg, deconv, lmdb, hdf5]


def solver(net, path, iters):
    # A relative snapshot prefix: the solver state names the weights file
    # by that path, so each run's files are comparable byte for byte.
    lines = ['net: "%s"' % path,
             'base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: "fixed"',
             "display: 1 max_iter: %d" % iters] + net.solver + [
             'snapshot_prefix: "snap"',
             "solver_mode: GPU random_seed: 1"]
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: nets.py DIR [NAME...]\n")
        return 2
    out = os.path.abspath(argv[1])
    known = {f.__name__: f for f in NETS}
    names = argv[2:] or list(known)
    for n in names:
        if n not in known:
            sys.stderr.write("nets.py: no net %s (%s)\n" % (n, " ".join(known)))
            return 2
    os.makedirs(out, exist_ok=True)
    listing = {}
    for n in names:
        net = known[n]()
        path = os.path.join(out, n + ".prototxt")
        with open(path, "w") as f:
            f.write(net.prototxt().replace("@DIR@", out))
        with open(os.path.join(out, n + ".solver.prototxt"), "w") as f:
            f.write(solver(net, path, ITERS))
        for fname, data in net.data.items():
            if isinstance(data, str):
                data = data.replace("@DIR@", out).encode()
            with open(os.path.join(out, fname), "wb") as f:
                f.write(data)
        listing[n] = net.expected()
    json.dump(listing, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
