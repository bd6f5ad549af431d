#!/usr/bin/env python3
"""Puts the per-size times of several mscclpp-bench --json files side by side, as a Markdown table.

    scripts/compare_runs.py [--in-place] [LABEL=]FILE ...

One column per file: this library's time per call (us) at each size, out of place (or in place
with --in-place); then NCCL's time from the first file that has it, and each file's ratio to it.
A label defaults to the file name without its directory and .json. Sizes missing from a file
show as "-". Used by scripts/gpu-compare.sh; needs only the standard library.
"""
import json
import os
import sys


def size_text(b):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return f"{b // n} {unit}"
    return f"{b} B"


def load(path, in_place):
    """Returns {size: time_us} for this library and for NCCL, from one --json file."""
    with open(path) as f:
        rows = json.load(f)["rows"]
    ours, nccl = {}, {}
    for r in rows:
        if bool(r["in_place"]) != in_place:
            continue
        (nccl if r["impl"] == "nccl" else ours)[r["size"]] = r["time_us"]
    return ours, nccl


def main(argv):
    in_place = "--in-place" in argv
    args = [a for a in argv if a != "--in-place"]
    if not args or any(a.startswith("-") for a in args):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    runs = []
    for a in args:
        label, sep, path = a.partition("=")
        if not sep:
            path, label = a, os.path.splitext(os.path.basename(a))[0]
        runs.append((label,) + load(path, in_place))
    nccl = next((n for _, _, n in runs if n), {})
    sizes = sorted(set().union(*(ours.keys() for _, ours, _ in runs)))
    cols = [label for label, _, _ in runs]
    ratio_cols = [f"{c} / NCCL" for c in cols] if nccl else []
    print(f"{'in place' if in_place else 'out of place'}, us per call")
    print("| size | " + " | ".join(cols + (["NCCL"] if nccl else []) + ratio_cols) + " |")
    print("|---:" * (1 + len(cols) + (1 if nccl else 0) + len(ratio_cols)) + "|")
    for s in sizes:
        cells = [f"{ours[s]:.2f}" if s in ours else "-" for _, ours, _ in runs]
        if nccl:
            cells.append(f"{nccl[s]:.2f}" if s in nccl else "-")
            for _, ours, _ in runs:
                cells.append(f"{ours[s] / nccl[s]:.2f}" if s in ours and s in nccl else "-")
        print(f"| {size_text(s)} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
