#!/usr/bin/env python3
"""expect.py EXPECT REPORT.json — checks libsn's model of a corpus program
(device 0 of a JSON trace report) against its written expectation. Exits
non-zero and says what differs when it does not match.

The expectation is one fact per line; '#' at the start of a word starts a
comment:

  period N                      steps per iteration
  passes training=T evaluation=E updates=U
  phases forward=F backward=B update=U     steps of each phase in the iteration
  layers TYPE:F/B ...           every layer in order: type, forward steps (of the
                                first training pass) and backward steps
  inputs L:P,P ...              the layers each layer reads from (layers without
                                inputs are left out)
  graph forks=N joins=N
  step S phase=PHASE [layer=L] [op=OP]    one step of the iteration
  tensor KIND layer=L bytes=B first=F [last=X] [live=A-B] [identity=ID]
                                there is one tensor of that kind (feature_map, ...),
                                produced by layer L (-1: none), of B bytes, first and last
                                touched at steps F and X; its live span under liveness
                                and its identity are as given
  identity matched              every tensor allocated in the iteration is the same
                                (call site and ordinal, size) as in the one before
  check ok                      the model's invariants hold
"""
import json
import re
import sys


class Check:
    def __init__(self, dev):
        self.dev = dev
        self.checked = 0
        self.errors = []

    def want(self, what, expected, got):
        self.checked += 1
        if expected != got:
            self.errors.append("%s: expected %s, got %s" % (what, expected, got))

    def fact(self, line):
        dev = self.dev
        key, *rest = line.split()
        kv = dict(x.split("=", 1) for x in rest if "=" in x)
        layers = dev["layers"]
        if key == "period":
            self.want("period", int(rest[0]), dev["iteration"]["period"])
        elif key == "passes":
            p = dev["passes"]
            got = "training=%d evaluation=%d updates=%d" % (p["training"], p["evaluation"], p["updates"])
            self.want("passes", " ".join(rest), got)
        elif key == "phases":
            p = dev["phases"]
            got = "forward=%d backward=%d update=%d" % (p["forward_steps"], p["backward_steps"], p["update_steps"])
            self.want("phases", " ".join(rest), got)
        elif key == "layers":
            got = " ".join("%s:%d/%d" % (l["type"], l["forward_steps"], l["backward_steps"]) for l in layers)
            self.want("layers", " ".join(rest), got)
        elif key == "inputs":
            got = " ".join("%d:%s" % (l["id"], ",".join(map(str, l["inputs"]))) for l in layers if l["inputs"])
            self.want("inputs", " ".join(rest), got)
        elif key == "graph":
            g = dev["graph"]
            self.want("graph", " ".join(rest), "forks=%d joins=%d" % (g["forks"], g["joins"]))
        elif key == "step":
            s = dev["memory_per_step"][int(rest[0])]
            for k, v in kv.items():
                self.want("step %s %s" % (rest[0], k), v, str(s[k]))
        elif key == "tensor":
            kind = rest[0].replace("_", " ")
            match = [t for t in dev["tensors"]
                     if t["kind"] == kind and t["producer"] == int(kv["layer"])
                     and t["bytes"] == int(kv["bytes"]) and t["first"] == int(kv["first"])
                     and ("last" not in kv or t["last"] == int(kv["last"]))]
            what = "tensor %s" % " ".join(rest[:5])
            self.want(what + ": tensors matching", 1, len(match))
            if len(match) != 1:
                return
            t = match[0]
            if "live" in kv:
                self.want(what + " live", kv["live"], "%d-%d" % tuple(t["live"]))
            if "identity" in kv:
                self.want(what + " identity", kv["identity"], t["identity"])
        elif key == "identity":
            i = dev["identity"]
            self.want("identity", "matched %d" % i["allocated_in_iteration"], "matched %d" % i["matched_previous"])
        elif key == "check":
            self.want("check", rest[0], dev["check"])
        else:
            self.errors.append("unknown expectation: %s" % line)


def main():
    expect, report = sys.argv[1], sys.argv[2]
    dev = json.load(open(report))["devices"][0]
    if not dev.get("found"):
        print("no iteration found")
        sys.exit(1)
    c = Check(dev)
    for raw in open(expect):
        line = re.sub(r"(^|\s)#.*", "", raw).strip()
        if not line:
            continue
        try:
            c.fact(line)
        except (KeyError, IndexError, TypeError) as e:
            c.checked += 1
            c.errors.append("%s: not in the report (%r)" % (line, e))
    for e in c.errors:
        print(e)
    print("%d facts checked, %d differ" % (c.checked, len(c.errors)))
    sys.exit(1 if c.errors else 0)


main()
