#!/usr/bin/env python3
"""Prints markdown tables from tokenlease_bench JSON (bench/run_hot_path.sh).

Pairs "tokenlease/<case>" with "baseline/<case>" and prints, per case, both
medians in ns and baseline/tokenlease (> 1 means tokenlease is faster), plus
tokenlease's admitted fraction. Other benchmarks (clock reads) follow in a
reference table. Uses the median aggregate when present (else the mean of the
plain runs) and wall time ("real_time") unless --cpu is given.

Usage: python3 bench/ratios.py [--cpu] OUT.json [MORE.json ...]
Standard library only.
"""

import json
import sys

_NS_PER_UNIT = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load_medians(path, field):
    """Returns {run_name: (ns, allowed or None)} in file order."""
    with open(path) as f:
        data = json.load(f)
    medians, plain = {}, {}
    for b in data.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        name = b.get("run_name", b["name"])
        ns = b[field] * _NS_PER_UNIT[b.get("time_unit", "ns")]
        value = (ns, b.get("allowed"))
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = value
        else:
            plain.setdefault(name, []).append(value)
    for name, runs in plain.items():
        if name not in medians:
            allowed = [a for _, a in runs if a is not None]
            medians[name] = (sum(ns for ns, _ in runs) / len(runs),
                             sum(allowed) / len(allowed) if allowed else None)
    return medians, data.get("context", {})


def fmt_ns(ns):
    return "—" if ns is None else f"{ns:.1f}"


def fmt_allowed(allowed):
    return "—" if allowed is None else f"{allowed:.3g}"


def print_tables(path, field):
    medians, context = load_medians(path, field)
    rows, reference = {}, []
    for name, value in medians.items():
        impl, _, case = name.partition("/")
        if impl in ("tokenlease", "baseline"):
            rows.setdefault(case, {})[impl] = value
        else:
            reference.append((name, value[0]))

    print(f"<!-- {path}: {context.get('date', '?')}, median of "
          f"{field}, host {context.get('host_name', '?')} -->")
    print("| benchmark | tokenlease median ns | baseline median ns "
          "| ratio (baseline/tokenlease) | tokenlease allowed |")
    print("|---|---:|---:|---:|---:|")
    for case, impls in rows.items():
        t = impls.get("tokenlease", (None, None))
        b = impls.get("baseline", (None, None))
        ratio = f"{b[0] / t[0]:.2f}x" if t[0] and b[0] else "—"
        print(f"| {case} | {fmt_ns(t[0])} | {fmt_ns(b[0])} | {ratio} "
              f"| {fmt_allowed(t[1])} |")
    if reference:
        print()
        print("| reference | median ns |")
        print("|---|---:|")
        for name, ns in reference:
            print(f"| {name} | {fmt_ns(ns)} |")


def main(argv):
    field = "real_time"
    paths = []
    for arg in argv[1:]:
        if arg == "--cpu":
            field = "cpu_time"
        elif arg.startswith("-"):
            print(__doc__, file=sys.stderr)
            return 2
        else:
            paths.append(arg)
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    for i, path in enumerate(paths):
        if i:
            print()
        print_tables(path, field)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
