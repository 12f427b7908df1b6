#!/usr/bin/env python3
"""Compares a Caffe net's layers with the layer table of libsn's trace report.

    layers.py NETS.json NAME REPORT.json

NETS.json is what tests/caffe/nets.py prints (per net, its training-phase
layers in Caffe's order: name, type, bottoms, tops); REPORT.json is the
report of a trace-mode run (SN_REPORT=file.json), whose devices[0].layers
lists the layers libsn found in the iteration, in forward order, each with
its type (libsn's own names), the layers it reads (inputs), and whether it
is a fork (a tensor it makes has more than one reader) or a join (it reads
more than one layer).

From the prototxt it derives the table libsn should report: one layer per
Caffe layer that does work of its own on the device, typed through CAFFE
below, reading the layers that last wrote its bottoms. It compares them
layer by layer: the type, the inputs, fork and join. Exit status 0 when
they are the same; otherwise 1, with a diff on stdout ("-" the prototxt's
layer, "+" the report's; inputs shown as TYPE@-N, the layer N places
before, so that one missing layer does not shift every line after it).
Python 3, standard library only.
"""
import difflib
import json
import sys

# Caffe's layer type -> libsn's name for the layer it becomes (a tuple: the
# names accepted, the first shown), or None for a layer that does no work
# of its own on the device.
#   data layers: the batch's copy to the device (DummyData's and HDF5Data's
#     from the host, Data's from the prefetch thread's device buffer);
#   Pooling: by pooling_param.pool (POOLING): MAX is Caffe's own kernel (the
#     cuDNN engine hands max pooling back to Caffe, layer_factory.cpp), AVE
#     cuDNN's;
#   SoftmaxWithLoss: one layer, as in the prototxt: its internal cuDNN
#     softmax, then Caffe's loss kernel and the reductions the host reads;
#     libsn's name for a softmax whose backward pass is not cuDNN's;
#   Eltwise SUM: a set to zero and one cuBLAS axpy per input;
#   Scale: Caffe's kernel (no libsn name yet: "scale");
#   Accuracy: Caffe's kernel (TEST phase only in the test's nets, so never
#     in the iteration).
# Split (inserted by Caffe where a top has several readers), Flatten and
# Reshape share their bottom's memory and do nothing in the forward pass:
# their tops are their bottoms.
CAFFE = {
    "DummyData": "data",
    "Data": "data",
    "HDF5Data": "data",
    "Input": "data",
    "Convolution": "conv",
    "Deconvolution": "deconv",
    "InnerProduct": "fc",
    "Pooling": None,  # POOLING
    "ReLU": "relu",
    "Sigmoid": "sigmoid",
    "TanH": "tanh",
    "LRN": "lrn",
    "Dropout": "dropout",
    "BatchNorm": "batchnorm",
    "Scale": "scale",
    "Concat": "concat",
    "Eltwise": ("add", "eltwise"),
    "SoftmaxWithLoss": "softmax_loss",
    "Softmax": "softmax",
    "Accuracy": "accuracy",
    "Split": None,
    "Flatten": None,
    "Reshape": None,
}
POOLING = {"MAX": "maxpool", "AVE": "avgpool"}
# A name accepted in place of another: compared as the first of its tuple.
ALIAS = {other: k[0] for k in CAFFE.values() if isinstance(k, tuple) for other in k[1:]}


def canonical(kind):
    return ALIAS.get(kind, kind[0] if isinstance(kind, tuple) else kind)


def expected(layers):
    """The table libsn should report for Caffe's LAYERS, in forward order:
    per layer {type, inputs (indices of the layers it reads), fork, join,
    caffe (the Caffe layer's name)}. A blob written in place is a new
    tensor each time: a layer after the in-place one reads its output."""
    out = []
    tensor_of = {}  # blob name -> index in tensors of what it holds now
    tensors = []  # {"writer": layer index, "readers": set of layer indices}
    for L in layers:
        t = L["type"]
        if t not in CAFFE:
            raise SystemExit("layers.py: no libsn type known for Caffe's %s (layer %s)" % (t, L["name"]))
        kind = POOLING[L.get("pool", "MAX")] if t == "Pooling" else CAFFE[t]
        if kind is None:  # shares its bottom's memory
            for b, top in zip(L["bottoms"], L["tops"]):
                tensor_of[top] = tensor_of[b]
            continue
        i = len(out)
        ins = set()
        for b in L["bottoms"]:
            if b not in tensor_of:
                raise SystemExit("layers.py: %s reads %s, which no layer before it makes" % (L["name"], b))
            tensors[tensor_of[b]]["readers"].add(i)
            ins.add(tensors[tensor_of[b]]["writer"])
        out.append({"type": canonical(kind), "caffe": L["name"], "inputs": sorted(ins),
                    "fork": False, "join": len(ins) > 1})
        for top in L["tops"]:
            tensor_of[top] = len(tensors)
            tensors.append({"writer": i, "readers": set()})
    for t in tensors:
        if len(t["readers"]) > 1:
            out[t["writer"]]["fork"] = True
    return out


def actual(report):
    d = report["devices"][0] if "devices" in report else report
    return [{"type": L["type"], "inputs": sorted(set(L["inputs"])), "fork": bool(L["fork"]),
             "join": bool(L["join"]), "id": L["id"]} for L in d.get("layers") or []]


def line(table, i, canon=False):
    """One layer as text, its inputs relative to it (TYPE@-N: the layer N
    places before); CANON: accepted alternatives as the name they stand in
    for."""
    L = table[i]
    kind = canonical if canon else (lambda k: k)
    ins = " ".join("%s@-%d" % (kind(table[j]["type"]), i - j) if 0 <= j < i else "#%d" % j for j in L["inputs"])
    flags = (" fork" if L["fork"] else "") + (" join" if L["join"] else "")
    return "%-12s <- %s%s" % (kind(L["type"]), ins or "-", flags)


def short(name, width=24):
    return name if len(name) <= width else "..." + name[len(name) - width + 3:]


def main(argv):
    if len(argv) != 4:
        sys.stderr.write("usage: layers.py NETS.json NAME REPORT.json\n")
        return 2
    want = expected(json.load(open(argv[1]))[argv[2]])
    try:
        got = actual(json.load(open(argv[3])))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as e:
        print("no layer table in %s: %s" % (argv[3], e))
        return 1
    wl = [line(want, i) for i in range(len(want))]
    gl = [line(got, i, canon=True) for i in range(len(got))]
    if wl == gl:
        return 0
    if not got:
        print("the report lists no layers (the prototxt has %d)" % len(want))
        return 1
    print("%d layers in the prototxt, %d in the report (- prototxt, + report)" % (len(want), len(got)))
    sm = difflib.SequenceMatcher(None, wl, gl, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            for i in range(i1, i2):
                print("  %-24s %s" % (short(want[i]["caffe"]), wl[i]))
            continue
        for i in range(i1, i2):
            print("- %-24s %s" % (short(want[i]["caffe"]), wl[i]))
        for j in range(j1, j2):
            print("+ %-24s %s" % ("(report's layer %d)" % got[j]["id"], line(got, j)))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
