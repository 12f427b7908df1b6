#!/usr/bin/env python3
"""caffe_nets.py: full-size networks as Caffe training prototxts, for
bench/caffe_bench.sh. Python 3, standard library only.

    caffe_nets.py alexnet   BATCH --models DIR   (DIR: Caffe's models/ folder)
    caffe_nets.py googlenet BATCH --models DIR
    caffe_nets.py vgg16     BATCH
    caffe_nets.py resnet-D  BATCH                (D: 50, 101, 152, or 3k+2 >= 56)

The net goes to stdout. Every net reads DummyData: BATCH images of
3xSxS from a Gaussian filler (S: 227 for AlexNet and 224 for GoogLeNet,
their TRAIN data layers' crop sizes; 224 for the generated nets) and
BATCH labels from a uniform filler over the 1000 classes, drawn anew
every iteration as a data layer's would be.

AlexNet and GoogLeNet are the prototxts of Caffe's model zoo
(models/bvlc_alexnet, models/bvlc_googlenet train_val.prototxt) with their
two Data layers (TRAIN and TEST) replaced by that one DummyData layer;
every other layer is kept as it is, GoogLeNet's two auxiliary classifiers
and losses included, and the TEST-phase Accuracy layers too (the training
net leaves them out, as Caffe always does).

VGG-16 (Simonyan and Zisserman 2015, configuration D): 13 3x3 convolutions
in five groups (64, 128, 256, 512, 512) with ReLU in place and 2x2 max
pooling after each group, then fc 4096, fc 4096 (ReLU and dropout in place)
and fc 1000, softmax loss: the layout of the authors' Caffe deploy file.

ResNet (He et al. 2016): conv1 7x7/2 with 64 outputs, 3x3/2 max pooling,
four stages of bottleneck blocks (1x1, 3x3, 1x1 convolutions, 64-512 then
256-2048 channels; the first block of a stage projects its input with a
1x1 convolution, stride 2 from the second stage on, on the first 1x1 as in
the authors' prototxts), every convolution without bias and followed by
BatchNorm and Scale (bias) in place, Eltwise SUM, ReLU in place; global
average pooling, fc 1000, softmax loss. Stages: 50 {3, 4, 6, 3}, 101
{3, 4, 23, 3}, 152 {3, 8, 36, 3}; any other depth D = 3k+2 >= 56 is
{3, 8, k-14, 3}, the way SuperNeurons deepens ResNet (and the reference
trainer's --net resnet --depth D does): D counts the convolutions and the
fc layer.
"""
import argparse
import os
import re
import sys


def dummy_data(batch, size):
    return f"""layer {{
  name: "data"
  type: "DummyData"
  top: "data"
  top: "label"
  dummy_data_param {{
    shape {{ dim: {batch} dim: 3 dim: {size} dim: {size} }}
    data_filler {{ type: "uniform" min: -1 max: 1 }}
    shape {{ dim: {batch} }}
    data_filler {{ type: "uniform" min: 0 max: 999 }}
  }}
}}
"""


def layer_blocks(text):
    """(start, end) of each top-level 'layer { ... }' block."""
    blocks = []
    for m in re.finditer(r"(?m)^layer\s*\{", text):
        depth, i = 0, m.start()
        while True:
            c = text[i]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        end = i + 1
        if end < len(text) and text[end] == "\n":
            end += 1
        blocks.append((m.start(), end))
    return blocks


def zoo_net(models, name, batch):
    path = os.path.join(models, name, "train_val.prototxt")
    text = open(path).read()
    blocks = layer_blocks(text)
    data = [b for b in blocks if re.search(r'^\s*type:\s*"Data"', text[b[0]:b[1]], re.M)]
    if len(data) != 2:
        sys.exit(f"caffe_nets.py: {path}: expected two Data layers, found {len(data)}")
    train = [b for b in data if re.search(r"phase:\s*TRAIN", text[b[0]:b[1]])]
    if len(train) != 1:
        sys.exit(f"caffe_nets.py: {path}: no TRAIN Data layer")
    m = re.search(r"crop_size:\s*(\d+)", text[train[0][0]:train[0][1]])
    if not m:
        sys.exit(f"caffe_nets.py: {path}: the TRAIN Data layer has no crop_size")
    size = int(m.group(1))
    out, pos = [], 0
    for i, (s, e) in enumerate(data):
        out.append(text[pos:s])
        if i == 0:
            out.append(dummy_data(batch, size))
        pos = e
    out.append(text[pos:])
    return "".join(out)


class Net:
    def __init__(self, name, batch):
        self.parts = [f'name: "{name}"\n', dummy_data(batch, 224)]

    def add(self, text):
        self.parts.append(text)

    def conv(self, name, bottom, top, out, kernel, stride=1, pad=0, bias=True):
        extra = "" if bias else "\n    bias_term: false"
        filler = 'weight_filler { type: "msra" }' + (
            '\n    bias_filler { type: "constant" value: 0 }' if bias else "")
        self.add(f"""layer {{
  name: "{name}"
  type: "Convolution"
  bottom: "{bottom}"
  top: "{top}"
  convolution_param {{
    num_output: {out}
    kernel_size: {kernel}
    stride: {stride}
    pad: {pad}{extra}
    {filler}
  }}
}}
""")

    def simple(self, name, kind, bottom, top, param=""):
        self.add(f"""layer {{
  name: "{name}"
  type: "{kind}"
  bottom: "{bottom}"
  top: "{top}"{param}
}}
""")

    def relu(self, name, blob):
        self.simple(name, "ReLU", blob, blob)

    def pool(self, name, bottom, top, kind, kernel, stride):
        self.simple(name, "Pooling", bottom, top,
                    f"\n  pooling_param {{ pool: {kind} kernel_size: {kernel} stride: {stride} }}")

    def fc(self, name, bottom, top, out):
        self.simple(name, "InnerProduct", bottom, top,
                    f"""
  inner_product_param {{
    num_output: {out}
    weight_filler {{ type: "gaussian" std: 0.01 }}
    bias_filler {{ type: "constant" value: 0 }}
  }}""")

    def loss(self, bottom):
        self.add(f"""layer {{
  name: "loss"
  type: "SoftmaxWithLoss"
  bottom: "{bottom}"
  bottom: "label"
  top: "loss"
}}
""")

    def text(self):
        return "".join(self.parts)


def vgg16(batch):
    n = Net("VGG_ILSVRC_16_layers", batch)
    t = "data"
    for g, (width, convs) in enumerate([(64, 2), (128, 2), (256, 3), (512, 3), (512, 3)], 1):
        for i in range(1, convs + 1):
            c = f"conv{g}_{i}"
            n.conv(c, t, c, width, 3, pad=1)
            n.relu(f"relu{g}_{i}", c)
            t = c
        n.pool(f"pool{g}", t, f"pool{g}", "MAX", 2, 2)
        t = f"pool{g}"
    for i, width in [(6, 4096), (7, 4096)]:
        n.fc(f"fc{i}", t, f"fc{i}", width)
        n.relu(f"relu{i}", f"fc{i}")
        n.simple(f"drop{i}", "Dropout", f"fc{i}", f"fc{i}",
                 "\n  dropout_param { dropout_ratio: 0.5 }")
        t = f"fc{i}"
    n.fc("fc8", t, "fc8", 1000)
    n.loss("fc8")
    return n.text()


def resnet_stages(depth):
    fixed = {50: [3, 4, 6, 3], 101: [3, 4, 23, 3], 152: [3, 8, 36, 3]}
    if depth in fixed:
        return fixed[depth]
    if depth >= 56 and (depth - 2) % 3 == 0:
        return [3, 8, (depth - 2) // 3 - 14, 3]
    sys.exit(f"caffe_nets.py: resnet depth {depth}: 50, 101, 152 or 3k+2 >= 56")


def conv_bn(n, name, bottom, out, kernel, stride, pad, relu):
    n.conv(name, bottom, name, out, kernel, stride, pad, bias=False)
    n.simple(f"bn_{name}", "BatchNorm", name, name)
    n.simple(f"scale_{name}", "Scale", name, name, "\n  scale_param { bias_term: true }")
    if relu:
        n.relu(f"{name}_relu", name)
    return name


def resnet(depth, batch):
    stages = resnet_stages(depth)
    n = Net(f"ResNet-{depth}", batch)
    t = conv_bn(n, "conv1", "data", 64, 7, 2, 3, True)
    n.pool("pool1", t, "pool1", "MAX", 3, 2)
    t = "pool1"
    for s, blocks in enumerate(stages):
        inner, outer = 64 << s, 256 << s
        for i in range(blocks):
            b = f"res{s + 2}_{i + 1}"
            stride = 2 if s > 0 and i == 0 else 1
            short = conv_bn(n, f"{b}_branch1", t, outer, 1, stride, 0, False) if i == 0 else t
            a = conv_bn(n, f"{b}_branch2a", t, inner, 1, stride, 0, True)
            a = conv_bn(n, f"{b}_branch2b", a, inner, 3, 1, 1, True)
            a = conv_bn(n, f"{b}_branch2c", a, outer, 1, 1, 0, False)
            n.add(f"""layer {{
  name: "{b}"
  type: "Eltwise"
  bottom: "{short}"
  bottom: "{a}"
  top: "{b}"
  eltwise_param {{ operation: SUM }}
}}
""")
            n.relu(f"{b}_relu", b)
            t = b
    n.simple("pool5", "Pooling", t, "pool5",
             "\n  pooling_param { pool: AVE global_pooling: true }")
    n.fc("fc1000", "pool5", "fc1000", 1000)
    n.loss("fc1000")
    return n.text()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("net", help="alexnet, googlenet, vgg16 or resnet-D")
    ap.add_argument("batch", type=int)
    ap.add_argument("--models", help="Caffe's models/ folder (alexnet, googlenet)")
    a = ap.parse_args()
    if a.batch < 1:
        sys.exit("caffe_nets.py: the batch must be at least 1")
    zoo = {"alexnet": "bvlc_alexnet", "googlenet": "bvlc_googlenet"}
    if a.net in zoo:
        if not a.models:
            sys.exit(f"caffe_nets.py: {a.net} needs --models (Caffe's models/ folder)")
        text = zoo_net(a.models, zoo[a.net], a.batch)
    elif a.net == "vgg16":
        text = vgg16(a.batch)
    elif a.net.startswith("resnet-") and a.net[7:].isdigit():
        text = resnet(int(a.net[7:]), a.batch)
    else:
        sys.exit(f"caffe_nets.py: unknown net {a.net}")
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
