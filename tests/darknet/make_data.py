#!/usr/bin/env python3
"""Writes the small synthetic classification set tests/test_darknet.sh trains
Darknet on: N 32x32 RGB PNG images in each of three classes (a colour
gradient in one channel over seeded noise), the image list, the labels file
and the .data file darknet's classifier reads (weights go to backup/ in the
directory it runs in). Darknet finds an image's class
by the label's name appearing in its path, so the labels are words that occur
nowhere else in a path. Deterministic: the same arguments give the same bytes.

Usage: make_data.py DIR [N]   (N images per class, default 8)
"""
import pathlib
import random
import struct
import sys
import zlib

SIZE = 32
LABELS = ["clsred", "clsgreen", "clsblue"]


def png(path, rows):
    # 8-bit RGB, no interlace; each row starts with filter type 0.
    raw = b"".join(b"\x00" + bytes(r) for r in rows)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xffffffff)

    ihdr = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 9))
                     + chunk(b"IEND", b""))


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: make_data.py DIR [N]")
    root = pathlib.Path(sys.argv[1]).resolve()
    per_class = int(sys.argv[2]) if len(sys.argv) == 3 else 8
    (root / "images").mkdir(parents=True, exist_ok=True)
    rng = random.Random(1234)
    paths = []
    for k, label in enumerate(LABELS):
        for i in range(per_class):
            rows = []
            for y in range(SIZE):
                row = []
                for x in range(SIZE):
                    px = [rng.randrange(0, 64) for _ in range(3)]
                    px[k] = min(255, 128 + 4 * ((x + y + i) % 32))
                    row.extend(px)
                rows.append(row)
            p = root / "images" / f"{i:03d}_{label}.png"
            png(p, rows)
            paths.append(str(p))
    (root / "train.list").write_text("\n".join(paths) + "\n")
    (root / "labels.txt").write_text("\n".join(LABELS) + "\n")
    (root / "tiny.data").write_text(
        f"classes={len(LABELS)}\ntrain={root}/train.list\nlabels={root}/labels.txt\n"
        "backup=backup\ntop=1\n")


if __name__ == "__main__":
    main()
