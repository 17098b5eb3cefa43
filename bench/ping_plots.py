#!/usr/bin/env python3
# SPDX-License-Identifier: ISC
"""Plots of a ping benchmark run (matplotlib, Debian's python3-matplotlib):
per background, the RTT CDF of every row on one chart (log-scale RTT axis,
and a tail-focused axis: 1 - CDF on a log scale, so p99 and p99.9 are
readable); and one summary chart of p50/p99/p99.9/max per row and
background. Prints the PNG paths.

  ping_plots.py DATA.json OUTBASE     (DATA: backgrounds, rows, rtts; as
                                       ping_report.plot writes it, or a
                                       results .json of ping_latency.py)
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def pct(xs, p):
    s = sorted(xs)
    return s[max(1, min(len(s), int(p / 100.0 * len(s) + 0.999999))) - 1]


def load(path):
    with open(path) as f:
        d = json.load(f)
    if "results" in d:  # a results file
        rows = [{"spec": s, "label": d["rows"][s]["label"]} for s in d["args"]["schedulers"]]
        return {"backgrounds": d["args"]["backgrounds"], "rows": rows,
                "rtts": {r["spec"]: {bg: d["results"][r["spec"]][bg]["rtts"]
                                     for bg in d["args"]["backgrounds"]} for r in rows}}
    return d


def style(i):
    colours = plt.get_cmap("tab10").colors
    return {"color": colours[i % 10], "linestyle": ("-", "--", ":", "-.")[i // 10 % 4]}


def cdf(d, bg, out):
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 5.2))
    for i, r in enumerate(d["rows"]):
        x = sorted(d["rtts"][r["spec"]][bg])
        if not x:
            continue
        n = len(x)
        y = [(k + 1) / n for k in range(n)]
        ax1.step(x, y, where="post", label=f"{r['label']} (p99 {pct(x, 99):.1f})", **style(i))
        ax2.step(x, [1 - v + 1 / n for v in y], where="post", **style(i))
    for ax in (ax1, ax2):
        ax.set_xscale("log")
        ax.set_xlabel("RTT (ms, log scale)")
        ax.grid(True, which="both", alpha=0.3)
    ax1.set_ylabel("fraction of pings ≤ RTT (CDF)")
    ax2.set_yscale("log")
    ax2.set_ylabel("fraction of pings ≥ RTT (1 - CDF, log)")
    for q, name in ((0.01, "p99"), (0.001, "p99.9")):
        ax2.axhline(q, color="grey", lw=0.6)
        ax2.text(ax2.get_xlim()[0], q, f" {name}", va="bottom", fontsize=8, color="grey")
    ax1.legend(fontsize=7.5, loc="lower right")
    fig.suptitle(f"Ping RTT between two VMs, background: {bg}")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def summary(d, out):
    bgs = d["backgrounds"]
    rows = d["rows"]
    fig, axes = plt.subplots(len(bgs), 1, figsize=(13, 2.9 * len(bgs)), squeeze=False)
    marks = (("p50", 50, "o"), ("p99", 99, "s"), ("p99.9", 99.9, "^"), ("max", 100, "x"))
    for ax, bg in zip(axes[:, 0], bgs):
        labels = []
        for i, r in enumerate(rows):
            x = d["rtts"][r["spec"]][bg]
            labels.append(r["label"])
            if not x:
                continue
            vals = [pct(x, p) if p < 100 else max(x) for _, p, _ in marks]
            ax.vlines(i, vals[0], vals[-1], color="lightgrey", lw=3)
            for (name, _, m), v, c in zip(marks, vals, ("tab:green", "tab:blue",
                                                          "tab:orange", "tab:red")):
                ax.scatter([i], [v], marker=m, color=c, label=name if i == 0 else None, zorder=3)
        ax.set_yscale("log")
        ax.set_ylabel("RTT ms")
        ax.set_title(f"background: {bg}", fontsize=10, loc="left")
        ax.set_xticks(range(len(rows)))
        ax.set_xticklabels(labels if ax is axes[-1, 0] else [""] * len(rows), rotation=30,
                           ha="right", fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", ncol=4)
    fig.suptitle("Ping RTT: p50 / p99 / p99.9 / max per row and background (log scale)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    d = load(sys.argv[1])
    out = []
    for bg in d["backgrounds"]:
        path = f"{sys.argv[2]}-cdf-{bg}.png"
        cdf(d, bg, path)
        out.append(path)
    path = f"{sys.argv[2]}-summary.png"
    summary(d, path)
    out.append(path)
    print("\n".join(out))


if __name__ == "__main__":
    main()
