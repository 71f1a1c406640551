#!/usr/bin/python3
"""Pictures of memwall results, called by `memwall plot` (which checks the file first).

  memory  a run's memory over time, one panel per device, stacked by category, with the
          device's capacity as a line (a run file, or one recorded point of a sweep); a
          run file's GPU panels carry a ribbon of the forward/backward/optimizer phases,
          and a serving run gets a KV cache panel with its budget
  metric  a sweep's metric against one axis, one line per value of a second axis; points
          that do not fit are crosses; other axes take their best value per point. With
          --x naming a result column instead (hardware_cost_usd), a trade-off: every
          fitting point, one line per value of --lines, labelled with the other axes
  fits    a sweep's fits / does-not-fit map over two axes, with the peak memory per cell
  ranking the best layouts of a search, one bar each split into where the step goes (the
          default for a `memwall optimize` file)

Needs matplotlib and h5py (Debian: python3-matplotlib python3-h5py). Bad input: one line
on stderr, exit 2; the PNG appears whole (written beside the target, then renamed) or
not at all.
"""
import argparse
import json
import math
import os
import sys

CATEGORIES = ["weights", "gradients", "optimizer", "activations", "kv_cache", "workspace", "context", "other"]
COLOURS = {"weights": "#4e79a7", "gradients": "#f28e2b", "optimizer": "#e15759", "activations": "#76b7b2",
           "kv_cache": "#59a14f", "workspace": "#edc948", "context": "#b07aa1", "other": "#9c755f"}
GIB = 2.0 ** 30
MAX_STEPS = 4000  # timeline points per device; beyond that each bin keeps its fullest instant


class BadInput(Exception):
    pass


class OutputFailure(Exception):
    """The picture could not be written where -o says: the output's fault, not the file's."""


def higher_is_better(metric):
    """As memwall report ranks (SweepReport.cpp): rates, what a dollar or joule buys, MFU,
    utilization and fitting are better higher; usd_per_step and joules_per_step lower."""
    return ("per_s" in metric and "per_step" not in metric) or "_per_usd" in metric or "_per_joule" in metric \
        or metric == "mfu" or "utilization" in metric or metric == "fits"


WORDS = {"mfu": "MFU", "gpu": "GPU", "gpus": "GPUs", "kv": "KV", "ttft": "TTFT", "tpot": "TPOT", "usd": "US$"}


def label(column):
    """Axis title in words, with the unit a reader expects for the column's name:
    hardware_cost_usd -> "hardware cost (US$)", gpu.peak_bytes -> "GPU peak (GiB)"."""
    name, unit = column, ""
    if column.endswith("_bytes") or column.startswith("gpu.peak."):
        name, unit = (column[:-6] if column.endswith("_bytes") else column), "GiB"
    elif column == "mfu" or column.endswith("utilization"):
        unit = "%"
    elif column.endswith("_usd"):
        name, unit = column[:-4], "US$"
    elif column.endswith("_per_s"):  # output_tokens_per_s: output tokens per second
        name = column[:-6] + " per second"
    elif column.endswith("_s") and ".p" not in column:
        name, unit = column[:-2], "s"
    elif column.endswith("_s") or "_s." in column:  # ttft_s.p50: TTFT p50 (s)
        name, unit = column.replace("_s.", " ").replace("_s", ""), "s"
    words = [WORDS.get(w, w) for w in name.replace(".", " ").replace("_", " ").split()]
    text = " ".join(words)
    return f"{text} ({unit})" if unit else text


def usd(v, _=None):
    """$7.8M, $450k, $1,600: money at a glance, never an offset of 1e7."""
    if abs(v) >= 1e6:
        return f"${v / 1e6:.3g}M"
    if abs(v) >= 1e4:
        return f"${v / 1e3:.3g}k"
    return f"${v:,.0f}"


def plain_ticks(ax, x, y):
    """No offset or scientific notation on a linear axis; dollars as dollars."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, ScalarFormatter
    for axis, col in ((ax.xaxis, x), (ax.yaxis, y)):
        if axis.get_scale() == "log":  # 1, 2, 5 per decade, each labelled as its column reads
            axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            axis.set_minor_formatter(NullFormatter())
            axis.set_major_formatter(FuncFormatter(usd if col and col.endswith("_usd") else lambda v, _: f"{v:g}"))
        elif col and col.endswith("_usd"):
            axis.set_major_formatter(FuncFormatter(usd))
        elif isinstance(axis.get_major_formatter(), ScalarFormatter):
            f = ScalarFormatter(useOffset=False)
            f.set_scientific(False)
            axis.set_major_formatter(f)


def scaled(column, values):
    if column.endswith("_bytes") or column.startswith("gpu.peak."):
        return [v / GIB for v in values]
    if column == "mfu" or column.endswith("utilization"):
        return [100 * v for v in values]
    return values


def short(axis):
    return axis.rsplit(".", 1)[-1]


def wrapped(text, width_pt, fontsize):
    """Each line of `text` wrapped to what `width_pt` points hold at the font size (about
    0.6 of the size in points per character): a title never cut."""
    import textwrap
    chars = max(20, int(width_pt / (0.6 * fontsize)))
    return "\n".join(w for line in text.split("\n") for w in (textwrap.wrap(line, chars) or [""]))


def set_title(ax, text, fontsize=10):
    # the title is centred over the axes: it may reach a little past them, not past the figure
    width_pt = ax.figure.get_figwidth() * 72 * min(0.92, ax.get_position().width + 0.08)
    ax.set_title(wrapped(text, width_pt, fontsize), fontsize=fontsize)


def set_suptitle(fig, text, fontsize):
    fig.suptitle(wrapped(text, fig.get_figwidth() * 72 * 0.92, fontsize), fontsize=fontsize)


# ---------------------------------------------------------------------------- reading

def texts(d):
    """A text column's values; a column of another type is a damaged file (bad input)."""
    if d.dtype.kind != "O":
        raise BadInput(f"{d.name} is not a text column; the file is corrupt")
    return d.asstr()[:]


def read_points(f):
    import numpy as np
    g = f["points"]
    columns = json.loads(g.attrs["columns"])
    axes = json.loads(g.attrs["axes"])
    # A forged file's lists can hold anything: each must be column names, each axis one of them.
    for what, names in (("columns", columns), ("axes", axes)):
        if not isinstance(names, list) or not all(isinstance(c, str) for c in names):
            raise BadInput(f"/points attribute {what} is not a list of column names; the file is corrupt")
    for a in axes:
        if a not in columns:
            raise BadInput(f"/points axis {a!r} is not one of its columns; the file is corrupt")
    table = {}
    for c in columns:
        d = g[c]
        table[c] = list(texts(d)) if d.dtype.kind == "O" else np.asarray(d[:], dtype=float).tolist()
    return table, axes


def axis_values(table, axis, rows):
    """The axis's distinct values in sweep order (numbers sorted, text as first seen)."""
    seen = []
    for r in rows:
        v = table[axis][r]
        if v not in seen:
            seen.append(v)
    if all(isinstance(v, float) for v in seen):
        seen.sort()
    return seen


def fmt(v):
    if isinstance(v, float) and v == int(v):
        return str(int(v))
    return str(v)


def require_axis(axes, name, option):
    if name not in axes:
        raise BadInput(f"{option} {name}: not an axis of this sweep; the axes are {', '.join(axes)}")


# ---------------------------------------------------------------------------- memory

def stack_order(series):
    """Categories bottom to top: those that never change (the CUDA context, weights that
    stay resident) first, so the bands that move sit on a flat base instead of the
    constant band riding on top of them as a saw-tooth."""
    cats = [c for c in CATEGORIES if c in series]
    constant = {c for c in cats if len(series[c]) == 0 or min(series[c]) == max(series[c])}
    return sorted(cats, key=lambda c: (c not in constant, CATEGORIES.index(c)))


def memory_series(g):
    """Per category bytes after every change, as arrays aligned with the change times."""
    import numpy as np
    t = np.asarray(g["time_s"][:], dtype=float)
    cat = np.asarray(texts(g["category"])) if len(t) else np.asarray([], dtype=str)
    cb = np.asarray(g["category_bytes"][:], dtype=float)
    total = np.asarray(g["total_bytes"][:], dtype=float)
    series = {}
    n = len(t)
    for c in CATEGORIES:
        mask = cat == c
        if not mask.any():
            continue
        # forward fill: the category keeps its bytes until its next change
        idx = np.where(mask, np.arange(n), -1)
        idx = np.maximum.accumulate(idx)
        series[c] = np.where(idx >= 0, cb[np.maximum(idx, 0)], 0.0)
    if n > MAX_STEPS:
        bins = np.minimum((t - t[0]) / max(t[-1] - t[0], 1e-300) * MAX_STEPS, MAX_STEPS - 1).astype(int)
        order = np.lexsort((-total, bins))
        first = np.ones(n, dtype=bool)
        first[1:] = bins[order][1:] != bins[order][:-1]
        keep = np.sort(order[first])
        keep = np.union1d(keep, [n - 1])
        t = t[keep]
        series = {c: v[keep] for c, v in series.items()}
    return t, series


PHASES = {"forward": "#a0cbe8", "backward": "#ffbe7d", "optimizer": "#8cd17d"}


def read_phases(f):
    """A run file's ops as (device, phase, start, end) arrays, read once for every panel;
    None for a sweep point (no ops), a file from before the phase column, or a run file
    written with --ops none. With --ops summary, /phases holds each phase's spans."""
    import numpy as np
    ops = f["phases"] if "phases" in f else f["ops"] if "ops" in f else None  # --ops summary: the spans
    if ops is None or "phase" not in ops or "start_s" not in ops:
        return None
    return (texts(ops["device"]), texts(ops["phase"]), np.asarray(ops["start_s"][:], dtype=float),
            np.asarray(ops["end_s"][:], dtype=float))


def phase_spans(phases, device, gap):
    """Per training phase, the merged [start, end) spans of the device's ops in that phase,
    gaps shorter than `gap` closed (a picture cannot show them, and 10^6 ops must not become
    10^6 bars). None without phases."""
    import numpy as np
    if phases is None:
        return None
    dev, phase, start, end = phases
    mask = dev == device
    phase, start, end = phase[mask], start[mask], end[mask]
    spans = {}
    for name in PHASES:
        sel = phase == name
        if not sel.any():
            continue
        order = np.argsort(start[sel], kind="stable")
        merged = []
        for a, b in zip(start[sel][order], end[sel][order]):
            if merged and a <= merged[-1][1] + gap:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        spans[name] = merged
    return spans


def draw_phases(ax, spans):
    """A ribbon along the top of the panel: which phase the device is in at each instant."""
    for name, merged in (spans or {}).items():
        ax.broken_barh([(a, max(b - a, 0.0)) for a, b in merged], (0.965, 0.035),
                       transform=ax.get_xaxis_transform(), color=PHASES[name], label=name, zorder=3)


def plot_kv(ax, kv):
    """Serving: the KV cache of one GPU (stored tokens' bytes, slots held) against its budget."""
    import numpy as np
    t = np.asarray(kv["time_s"][:], dtype=float)
    used = np.asarray(kv["used_bytes"][:], dtype=float)
    reserved = np.asarray(kv["reserved_bytes"][:], dtype=float)
    budget = float(kv.attrs.get("budget_bytes", 0))
    if len(t):
        ax.step(t, reserved / GIB, where="post", color=COLOURS["kv_cache"], alpha=0.5, label="reserved")
        ax.step(t, used / GIB, where="post", color=COLOURS["kv_cache"], label="stored tokens")
    if budget > 0:
        ax.axhline(budget / GIB, color="black", linestyle=":", linewidth=1.2, label=f"KV budget {budget / GIB:.1f} GiB")
    top = max([budget] + ([float(reserved.max())] if len(t) else []))
    ax.set_ylim(0, top / GIB * 1.08 if top > 0 else 1)
    set_title(ax, "KV cache per GPU, and the requests waiting to be scheduled", 10)
    ax.set_ylabel("KV cache (GiB)")
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    # The queue on its own axis: a server that falls behind shows it growing.
    if "waiting_seqs" in kv and len(t):
        waiting = np.asarray(kv["waiting_seqs"][:], dtype=float)
        q = ax.twinx()
        q.step(t, waiting, where="post", color="#e15759", linewidth=1.0, label="waiting requests")
        q.set_ylim(0, max(1.0, float(waiting.max())) * 1.08)
        q.set_ylabel("waiting requests")
        h, l = q.get_legend_handles_labels()
        handles, labels = handles + h, labels + l
    ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=8, frameon=False)


def plot_managed(ax, name, g):
    """Unified memory: one GPU's managed bytes on the GPU and on the host over time."""
    import numpy as np
    t = np.asarray(g["time_s"][:], dtype=float)
    resident = np.asarray(g["resident_bytes"][:], dtype=float)
    host = np.asarray(g["host_bytes"][:], dtype=float)
    if len(t):
        ax.step(t, resident / GIB, where="post", color="#4e79a7", label="on the GPU")
        ax.step(t, host / GIB, where="post", color="#e15759", label="on the host")
    moved = (float(g.attrs.get("migrated_h2d_bytes", 0)) + float(g.attrs.get("migrated_d2h_bytes", 0))) / GIB
    set_title(ax, f"{name}: managed memory ({int(g.attrs.get('faults', 0))} faults, {moved:.2f} GiB migrated)", 10)
    ax.set_ylabel("managed (GiB)")
    top = max([float(resident.max()) if len(t) else 0.0, float(host.max()) if len(t) else 0.0])
    ax.set_ylim(0, top / GIB * 1.08 if top > 0 else 1)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def plot_memory(f, memory, title, out, device):
    import matplotlib.pyplot as plt
    import numpy as np
    names = sorted(memory.keys(), key=lambda n: (0 if ".gpu" in n else 1 if ".cpu" in n else 2, n))
    if device:
        if device not in names:
            raise BadInput(f"--device {device}: no such device; the devices are {', '.join(names)}")
        names = [device]
    names = names[:6]
    # a run file's ops say which phase each instant belongs to; a sweep point has no ops
    run_file = memory.parent.name == "/"
    phases = read_phases(f) if run_file else None
    kv = f["kv_cache"] if run_file and "kv_cache" in f else None
    # unified memory: the first plotted GPU with managed memory gets a residency panel
    paged = [n for n in names if run_file and "paging" in f and n in f["paging"]][:1]
    rows = len(names) + (kv is not None) + len(paged)
    fig, axes = plt.subplots(rows, 1, figsize=(10, 3.2 * rows + 0.8), squeeze=False, sharex=True)
    # every panel runs to the last change of any device: memory held to the end shows
    end = max((float(memory[n]["time_s"][-1]) for n in names if len(memory[n]["time_s"])), default=0.0)
    for ax, name in zip(axes[:, 0], names):
        g = memory[name]
        t, series = memory_series(g)
        if len(t) and t[-1] < end:
            t = np.append(t, end)
            series = {c: np.append(v, v[-1]) for c, v in series.items()}
        cap = float(g.attrs.get("capacity_bytes", 0))
        peak = float(g.attrs.get("peak_bytes", 0))
        hw = g.attrs.get("hardware", "")
        hw = hw.decode() if isinstance(hw, bytes) else hw
        count = int(g.attrs.get("count", 1))
        cats = stack_order(series)
        if len(t):
            ax.stackplot(t, [series[c] / GIB for c in cats], labels=cats, step="post",
                         colors=[COLOURS[c] for c in cats], linewidth=0)
        # a capacity far above the peak would flatten the picture: then name it only
        on_scale = cap > 0 and cap <= 3 * peak
        if on_scale:
            ax.axhline(cap / GIB, color="black", linestyle="--", linewidth=1.2,
                       label=f"capacity {cap / GIB:.1f} GiB")
        elif cap > 0:
            ax.plot([], [], " ", label=f"capacity {cap / GIB:.1f} GiB\n(off the scale)")
        state = "OUT OF MEMORY" if cap > 0 and peak > cap else "fits"
        set_title(ax, f"{name} ({hw}{', x' + str(count) if count > 1 else ''}): peak {peak / GIB:.2f} GiB, {state}",
                  10)
        draw_phases(ax, phase_spans(phases, name, end / 2000) if ".gpu" in name else None)
        ax.set_ylabel("memory (GiB)")
        top = max(cap if on_scale else 0, peak)
        ax.set_ylim(0, top / GIB * 1.08 if top > 0 else 1)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if paged:
        plot_managed(axes[len(names), 0], paged[0], f["paging"][paged[0]])
    if kv is not None:
        plot_kv(axes[-1, 0], kv)
    axes[-1, 0].set_xlabel("simulated time (s)")
    set_suptitle(fig, title, 11)
    fig.tight_layout()
    save(fig, out)
    return f"memory of {len(names)} device(s)"


# ---------------------------------------------------------------------------- sweeps

def best_rows(table, rows, keys, y):
    """One row per distinct value of `keys`: the best by `y` among the other axes."""
    better = (lambda a, b: a > b) if higher_is_better(y) else (lambda a, b: a < b)
    best = {}
    for r in rows:
        k = tuple(table[a][r] for a in keys)
        v = table[y][r]
        if k not in best or (not math.isnan(v) and (math.isnan(table[y][best[k]]) or better(v, table[y][best[k]]))):
            best[k] = r
    return best


def plot_metric(table, axes, attrs, out, x, y, lines):
    import matplotlib.pyplot as plt
    serving = "ttft_s.p50" in table
    x = x or axes[0]
    y = y or ("output_tokens_per_s" if serving else "step_time_s")
    if x not in axes and x in table:
        return plot_tradeoff(table, axes, attrs, out, x, y, lines)
    # Nodes of different machines hold different GPU counts (a server of 8, a rack of 72):
    # plotted against nodes, 9 servers would sit beside 1 rack; against GPUs they compare.
    if x.endswith("nodes") and "gpus" in table and lines and lines.endswith("node"):
        per = {}
        for r in range(len(table["index"])):
            if table["status"][r] == "ok" and table[x][r]:
                per.setdefault(table[lines][r], set()).add(table["gpus"][r] / table[x][r])
        if len({v for s in per.values() for v in s}) > 1:
            return plot_tradeoff(table, axes, attrs, out, "gpus", y, lines)
    require_axis(axes, x, "--x")
    if y not in table:
        raise BadInput(f"--y {y}: no such column; the columns are {', '.join(table.keys())}")
    if isinstance(table[y][0] if table[y] else 0.0, str):
        raise BadInput(f"--y {y}: a text column; --y needs a number column")
    if lines is None:
        lines = next((a for a in axes if a != x), "")
    # several axes joined by commas: one line per combination of their values (zipped
    # axes that together name a strategy)
    line_axes = [a for a in lines.split(",") if a] if lines else []
    for a in line_axes:
        require_axis(axes, a, "--lines")
        if a == x:
            raise BadInput(f"--lines {a}: the same axis as --x")
    ok = [r for r in range(len(table["index"])) if table["status"][r] == "ok"]
    if not ok:
        raise BadInput("no point of this sweep ran; nothing to plot (memwall report lists the errors)")
    fits = table.get("fits", [1.0] * len(table["index"]))
    xs = axis_values(table, x, ok)
    numeric_x = all(isinstance(v, float) for v in xs)
    pos = {v: (v if numeric_x else i) for i, v in enumerate(xs)}
    keys = [x] + line_axes
    others = [a for a in axes if a not in keys]
    fig, ax = plt.subplots(figsize=(9, 5.5))
    line_of = lambda r: tuple(table[a][r] for a in line_axes)
    groups = list(dict.fromkeys(line_of(r) for r in ok)) if line_axes else [None]
    if len(line_axes) == 1:
        groups = [(v,) for v in axis_values(table, line_axes[0], ok)]
    cmap = plt.get_cmap("viridis" if len(groups) > 10 else "tab10")
    crossed = False
    for gi, gv in enumerate(groups):
        rows = [r for r in ok if gv is None or line_of(r) == gv]
        fitting = best_rows(table, [r for r in rows if fits[r] != 0], keys, y)
        pts = sorted((pos[table[x][r]], table[y][r]) for r in fitting.values() if not math.isnan(table[y][r]))
        colour = cmap(gi / max(len(groups) - 1, 1)) if len(groups) > 10 else cmap(gi % 10)
        name = ", ".join(f"{short(a)} = {fmt(v)}" for a, v in zip(line_axes, gv)) if line_axes else y
        # markers and dashes differ too, so that equal lines stay visible
        marker, dash = "osD^vP*X"[gi % 8], ["-", "--", "-.", ":"][gi % 4]
        if pts:
            ax.plot([p[0] for p in pts], scaled(y, [p[1] for p in pts]), marker=marker, linestyle=dash, color=colour,
                    label=name, markersize=7 - (gi % 3), alpha=0.9)
        over = [r for r in rows if fits[r] == 0 and not math.isnan(table[y][r])]
        over = [r for r in over if table[x][r] not in {table[x][q] for q in fitting.values()}]
        if over:
            ax.scatter([pos[table[x][r]] for r in over], scaled(y, [table[y][r] for r in over]), marker="x",
                       color=colour, s=60, label=None)
            crossed = True
    if crossed:
        ax.scatter([], [], marker="x", color="grey", label="does not fit")
    # a point that did not fit has no time or throughput (NaN): say how many, not nothing
    unplaced = sum(1 for r in range(len(fits)) if fits[r] == 0 and math.isnan(table[y][r]))
    if unplaced:
        ax.plot([], [], " ", label=f"{unplaced} point{'s' if unplaced > 1 else ''} did not fit\n(no {y}; --kind fits)")
    if numeric_x:
        lo, hi = min(xs), max(xs)
        if lo > 0 and hi / lo >= 16:
            ax.set_xscale("log", base=2)
        ax.set_xticks(xs)
        ax.set_xticklabels([fmt(v) for v in xs])
    else:
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([fmt(v) for v in xs], rotation=20 if len(xs) > 4 else 0)
    plain_ticks(ax, None, y)
    ax.set_xlabel(label(short(x)))
    ax.set_ylabel(label(y))
    ax.grid(alpha=0.3)
    # A long legend goes below the axes, where it hides no line: inside, past a few
    # entries or long names, it covers what it names.
    entries = ax.get_legend_handles_labels()[1]
    if len(entries) > 4 or any(len(e) > 40 for e in entries):
        cols = 1 if any(len(e) > 40 for e in entries) else 2
        rows = (len(entries) + cols - 1) // cols + sum(e.count("\n") for e in entries)
        fig.set_figheight(fig.get_figheight() + 0.2 * rows + 0.3)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=cols, frameon=False)
    else:
        ax.legend(fontsize=9)
    note = f"; best over {', '.join(short(a) for a in others)}" if others else ""
    set_title(ax, f"{label(y)} against {short(x)}{note}\n{attrs.get('sweep_file', '')}", 10)
    fig.tight_layout()
    save(fig, out)
    return f"{y} against {x} for {len(ok)} points"


def number_column(table, name, option):
    if name not in table:
        raise BadInput(f"{option} {name}: no such column; the columns are {', '.join(table.keys())}")
    if table[name] and isinstance(table[name][0], str):
        raise BadInput(f"{option} {name}: a text column; {option} needs a number column")


def point_label(table, others, r):
    """What a point is: its GPU count (nodes mean servers for one machine and racks for
    another) and the other axes' values."""
    parts = []
    if "gpus" in table and not math.isnan(table["gpus"][r]):
        parts.append(f"{fmt(table['gpus'][r])} GPUs")
    parts += [f"{short(a)} {fmt(table[a][r])}" for a in others if not a.endswith("nodes") or "gpus" not in table]
    return ", ".join(parts)


def pareto(rows, table, x, y):
    """The rows no other row beats on both x (lower is better: cost, GPUs) and y, by x."""
    better = (lambda a, b: a > b) if higher_is_better(y) else (lambda a, b: a < b)
    front, best = [], None
    for r in sorted(rows, key=lambda r: (table[x][r], table[y][r] if not higher_is_better(y) else -table[y][r])):
        if best is None or better(table[y][r], best):
            front.append(r)
            best = table[y][r]
    return front


def plot_tradeoff(table, axes, attrs, out, x, y, lines):
    """Two results against each other (cost against time): per value of an axis, its
    best points joined (the Pareto front: no other point of the line is cheaper and
    better), the others as open markers, each front point labelled with its GPU count and
    the other axes' values."""
    import matplotlib.pyplot as plt
    number_column(table, x, "--x")
    number_column(table, y, "--y")
    if lines is None:
        lines = axes[0] if axes else ""
    if lines:
        require_axis(axes, lines, "--lines")
    ok = [r for r in range(len(table["index"])) if table["status"][r] == "ok"]
    fits = table.get("fits", [1.0] * len(table["index"]))
    ok = [r for r in ok if fits[r] != 0 and not math.isnan(table[x][r]) and not math.isnan(table[y][r])]
    if not ok:
        raise BadInput("no point of this sweep fits; nothing to plot (memwall report says why)")
    others = [a for a in axes if a != lines]
    fig, ax = plt.subplots(figsize=(10, 6))
    groups = axis_values(table, lines, ok) if lines else [None]
    cmap = plt.get_cmap("tab10")
    labels = []
    for gi, gv in enumerate(groups):
        rows = [r for r in ok if gv is None or table[lines][r] == gv]
        front = pareto(rows, table, x, y)
        rest = [r for r in rows if r not in front]
        colour = cmap(gi % 10)
        ax.plot(scaled(x, [table[x][r] for r in front]), scaled(y, [table[y][r] for r in front]),
                marker="osD^vP*X"[gi % 8], color=colour, label=f"{short(lines)} = {fmt(gv)}" if lines else y)
        if rest:
            ax.scatter(scaled(x, [table[x][r] for r in rest]), scaled(y, [table[y][r] for r in rest]),
                       marker="osD^vP*X"[gi % 8], facecolors="none", edgecolors=colour, alpha=0.6)
        for r in front:
            # neighbouring lines try opposite sides first, so that close lines stay legible
            labels.append((point_label(table, others, r), (scaled(x, [table[x][r]])[0], scaled(y, [table[y][r]])[0]),
                           colour, 0 if gi % 2 == 0 else 1))
    if any(r not in pareto([q for q in ok if not lines or table[lines][q] == table[lines][r]], table, x, y)
           for r in ok):
        ax.scatter([], [], marker="o", facecolors="none", edgecolors="grey", label="beaten on both axes")
    for setter, col in ((ax.set_xscale, x), (ax.set_yscale, y)):
        vals = [v for v in table[col] if not math.isnan(v)]
        if vals and min(vals) > 0 and max(vals) / min(vals) >= 16:
            setter("log")
    plain_ticks(ax, x, y)
    ax.set_xlabel(label(x))
    ax.set_ylabel(label(y))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=9)
    set_title(ax, f"{label(y)} against {label(x)}, fitting points (the best labelled where there is room)\n"
                  f"{attrs.get('sweep_file', '')}", 10)
    fig.tight_layout()
    place_labels(fig, ax, labels)
    save(fig, out)
    return f"{y} against {x} for {len(ok)} points"


def place_labels(fig, ax, labels):
    """Each (text, point, colour, first side) label beside its point, on the first side
    where it stays inside the axes and overlaps neither an earlier label nor the legend;
    a label with no such side is left out. Placed after the layout: the axes keep their
    box, so what was clear stays clear."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    taken = [ax.get_legend().get_window_extent(renderer)] if ax.get_legend() else []
    sides = [((7, 4), "left", "bottom"), ((-7, -4), "right", "top"), ((7, -4), "left", "top"),
             ((-7, 4), "right", "bottom"), ((0, 9), "center", "bottom"), ((0, -9), "center", "top")]
    left_out = 0
    for text, xy, colour, first in labels:
        for offset, ha, va in sides[first:] + sides[:first]:
            t = ax.annotate(text, xy, textcoords="offset points", xytext=offset, ha=ha, va=va, fontsize=7,
                            color=colour)
            b = t.get_window_extent(renderer)
            inside = b.x0 >= frame.x0 and b.x1 <= frame.x1 and b.y0 >= frame.y0 and b.y1 <= frame.y1
            clear = all(b.x1 <= o.x0 or o.x1 <= b.x0 or b.y1 <= o.y0 or o.y1 <= b.y0 for o in taken)
            if inside and clear:
                taken.append(b)
                break
            t.remove()
        else:
            left_out += 1
    return left_out


PARTS = [("breakdown_s.compute", "compute", "#4e79a7"), ("breakdown_s.exposed_comm", "exposed communication", "#f28e2b"),
         ("breakdown_s.pipeline_bubble", "pipeline bubble", "#e15759"),
         ("breakdown_s.offload_stall", "offload stall", "#76b7b2"), ("breakdown_s.host_overhead", "host", "#edc948"),
         ("breakdown_s.paging_stall", "paging stall", "#b07aa1")]


def setting(axis, value):
    """A layout key and its value in few words: "mb 8", "ZeRO-1", "1f1b", "recompute none"."""
    key, v = short(axis), fmt(value)
    words = {"micro_batch": f"mb {v}", "zero": f"ZeRO-{v}", "pipeline_schedule": v, "virtual_stages": f"v {v}",
             "first_stage_layers": f"first stage {v} layers" if v != "0" else "first stage even",
             "last_stage_layers": f"last stage {v} layers" if v != "0" else "last stage even",
             "optimizer": f"optimizer offload {v}", "params": f"params offload {v}"}
    return words.get(key, f"{key} {v}")


def plot_ranking(table, axes, attrs, out, y, top=15):
    """An optimize file's ranking: its best layouts by `y` (fastest first), one bar each,
    split into where the step goes, named by the layout keys that differ among them."""
    import matplotlib.pyplot as plt
    if y not in table or (table[y] and isinstance(table[y][0], str)):
        raise BadInput(f"--y {y}: no such number column; the columns are {', '.join(table.keys())}")
    fits = table.get("fits", [1.0] * len(table["index"]))
    ok = [r for r in range(len(table["index"]))
          if table["status"][r] == "ok" and fits[r] != 0 and not math.isnan(table[y][r])]
    if not ok:
        raise BadInput("no layout of this search fits; nothing to rank (memwall report says why)")
    ok.sort(key=lambda r: -table[y][r] if higher_is_better(y) else table[y][r])
    best = ok[:top]
    varying = [a for a in axes if len({fmt(table[a][r]) for r in best}) > 1]
    names = [f"#{i + 1}  " + ", ".join(setting(a, table[a][r]) for a in varying) for i, r in enumerate(best)]
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.42 * len(best)))
    pos = list(range(len(best)))[::-1]  # #1 on top
    timed = y == "step_time_s" and all(p in table for p, _, _ in PARTS[:3])
    if timed:
        left = [0.0] * len(best)
        for col, name, colour in PARTS:
            if col not in table:
                continue
            part = [0.0 if math.isnan(table[col][r]) else table[col][r] for r in best]
            if any(part):
                ax.barh(pos, part, left=left, color=colour, label=name, height=0.7)
                left = [a + b for a, b in zip(left, part)]
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=6, frameon=False)
    else:
        ax.barh(pos, [table[y][r] for r in best], color="#4e79a7", height=0.7)
    ax.set_yticks(pos)
    ax.set_yticklabels(names, fontsize=8)
    ax.set_xlabel(label(y))
    ax.grid(alpha=0.3, axis="x")
    same = [a for a in axes if a not in varying]
    note = ("; all " + ", ".join(setting(a, table[a][best[0]]) for a in same)) if same else ""
    set_suptitle(fig, f"the best {len(best)} of {len(ok)} fitting layouts by {label(y)}{note}\n"
                      f"{attrs.get('sweep_file', '')}", 10)
    fig.tight_layout()
    save(fig, out)
    return f"the best {len(best)} of {len(ok)} layouts by {y}"


def plot_fits(table, axes, attrs, out, x, y):
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap
    if len(axes) < 2 and not (x and y):
        raise BadInput("a fits map needs two axes; this sweep has " + str(len(axes)))
    x = x or axes[0]
    y = y or next(a for a in axes if a != x)
    require_axis(axes, x, "--x")
    require_axis(axes, y, "--y")
    if x == y:
        raise BadInput(f"--y {y}: the same axis as --x")
    rows = list(range(len(table["index"])))
    xs, ys = axis_values(table, x, rows), axis_values(table, y, rows)
    # per cell: 1 all fit, 0 none fit, in between some, NaN error only
    grid = np.full((len(ys), len(xs)), np.nan)
    text = [["" for _ in xs] for _ in ys]
    errors = []  # cells whose points all failed; a cell with no point (filtered out) stays white
    peak = table.get("gpu.peak_bytes")
    for j, yv in enumerate(ys):
        for i, xv in enumerate(xs):
            cell = [r for r in rows if table[x][r] == xv and table[y][r] == yv]
            ran = [r for r in cell if table["status"][r] == "ok"]
            if not ran:
                text[j][i] = "error" if cell else "not run"
                if cell:
                    errors.append((i, j))
                continue
            fit = [r for r in ran if table.get("fits", [1.0] * len(rows))[r] != 0]
            grid[j, i] = len(fit) / len(ran)
            word = ("fits" if len(ran) == 1 else f"all {len(ran)} fit") if len(fit) == len(ran) else \
                ("OOM" if len(ran) == 1 else f"none of {len(ran)} fit") if not fit else f"{len(fit)} of {len(ran)} fit"
            gib = f"\n{min(peak[r] for r in ran) / GIB:.1f} GiB" if peak else ""
            text[j][i] = word + gib
    # red none fit, yellow some, green all: a cell of several points (other axes, zipped
    # ones) where only some fit is never painted as if all did
    from matplotlib.colors import BoundaryNorm
    cmap = ListedColormap(["#e15759", "#f1ce63", "#59a14f"])
    cmap.set_bad("white")
    norm = BoundaryNorm([-0.5, 1e-9, 1 - 1e-9, 1.5], cmap.N)
    fig, ax = plt.subplots(figsize=(max(6, 1.3 * len(xs) + 2.5), max(4, 0.8 * len(ys) + 2)))
    ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, norm=norm, aspect="auto", origin="lower")
    from matplotlib.patches import Rectangle
    for i, j in errors:
        ax.add_patch(Rectangle((i - 0.5, j - 0.5), 1, 1, color="#d0d0d0"))
    for j in range(len(ys)):
        for i in range(len(xs)):
            ax.text(i, j, text[j][i], ha="center", va="center", fontsize=8,
                    color="#808080" if text[j][i] == "not run" else "black")
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels([fmt(v) for v in xs])
    ax.set_yticks(range(len(ys)))
    ax.set_yticklabels([fmt(v) for v in ys])
    ax.set_xlabel(label(short(x)))
    ax.set_ylabel(label(short(y)))
    others = [a for a in axes if a not in (x, y)]
    note = f"each cell holds every {', '.join(short(a) for a in others)}; smallest GPU peak shown" if others else \
        "GPU peak per cell"
    some = any(0 < v < 1 for v in grid.flatten() if not np.isnan(v))
    legend = "green all fit, red none fit (out of memory)" + (", yellow some fit" if some else "") + \
        (", grey failed" if errors else "") + (", white not run (filtered)" if any("not run" in r for r in text) else "")
    set_title(ax, f"fits in memory: {legend}\n{note}\n{attrs.get('sweep_file', '')}", 9)
    fig.tight_layout()
    save(fig, out)
    return f"fits over {x} x {y}"


# ---------------------------------------------------------------------------- output

def dump_texts(fig, path):
    """Every text the figure shows with its box in pixels, for tests that read a plot
    (MEMWALL_PLOT_TEXTS names the JSON file): titles, axis titles, tick labels, point
    labels and the legend."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = []

    def add(role, t):
        if t.get_visible() and t.get_text():
            b = t.get_window_extent(renderer)
            texts.append({"role": role, "text": t.get_text(), "box": [b.x0, b.y0, b.x1, b.y1]})

    texts.append({"role": "figure", "text": "", "box": [0, 0, fig.bbox.width, fig.bbox.height]})
    for t in fig.texts:
        add("suptitle", t)
    for ax in fig.axes:
        add("title", ax.title)
        add("xlabel", ax.xaxis.label)
        add("ylabel", ax.yaxis.label)
        for t in ax.get_xticklabels():
            add("xtick", t)
        for t in ax.get_yticklabels():
            add("ytick", t)
        for t in ax.texts:
            add("annotation", t)
        if ax.get_legend():
            for t in ax.get_legend().get_texts():
                add("legend", t)
        offset = ax.xaxis.get_offset_text()
        add("xoffset", offset)
        add("yoffset", ax.yaxis.get_offset_text())
    with open(path, "w") as f:
        json.dump(texts, f)


def save(fig, out):
    import matplotlib.pyplot as plt
    if os.environ.get("MEMWALL_PLOT_TEXTS"):
        dump_texts(fig, os.environ["MEMWALL_PLOT_TEXTS"])
    # A fresh temporary file of our own (created exclusively, an unpredictable name: a
    # link planted at a fixed name would have been written through), renamed into place.
    import tempfile
    try:
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(out)),
                                   prefix="." + os.path.basename(out)[:100] + ".", suffix=".tmp.png")
    except OSError as e:
        plt.close(fig)
        raise OutputFailure(f"{out}: cannot write the picture there ({e.strerror or e})")
    mask = os.umask(0)
    os.umask(mask)
    os.fchmod(fd, 0o666 & ~mask)  # as an ordinary new file, not mkstemp's 0600
    try:
        with os.fdopen(fd, "wb") as fh:
            # no timestamps in the file: the same results give the same bytes
            fig.savefig(fh, format="png", dpi=110, metadata={"Software": None})
        os.replace(tmp, out)
    except OSError as e:
        raise OutputFailure(f"{out}: writing the picture failed ({e.strerror or e})")
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.remove(tmp)


def main():
    p = argparse.ArgumentParser(prog="memwall plot", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("-o", "--output", required=True)
    p.add_argument("--kind", choices=["memory", "metric", "fits", "ranking"])
    p.add_argument("--x")
    p.add_argument("--y")
    p.add_argument("--lines")
    p.add_argument("--point", type=int)
    p.add_argument("--device")
    p.add_argument("--rows")  # the rows `memwall plot --filter` kept, by position
    a = p.parse_args()
    try:
        import h5py
        import matplotlib
        matplotlib.use("Agg")
    except ImportError as e:
        print(f"memwall plot: {e.name} is missing for {sys.executable}; scripts/install_deps.sh installs "
              "python3-matplotlib and python3-h5py (or set MEMWALL_PYTHON)", file=sys.stderr)
        return 3
    try:
        with h5py.File(a.file, "r") as f:
            attrs = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
            run = attrs.get("format") == "memwall-run"
            # an optimize search's file reads first as its ranking
            searched = str(attrs.get("sweep_file", "")).endswith("(memwall optimize)")
            kind = a.kind or ("memory" if run else "ranking" if searched and not a.x else "metric")
            if run and kind != "memory":
                raise BadInput(f"--kind {kind}: a run file has only a memory plot (--kind metric and fits take a sweep)")
            if kind == "memory":
                if run:
                    title = attrs.get("title", attrs.get("spec_file", "")).split("\n")[0]
                    what = plot_memory(f, f["memory"], title, a.output, a.device)
                else:
                    if a.point is None:
                        raise BadInput("--kind memory of a sweep needs --point INDEX (a point recorded with "
                                       "record: {memory: true})")
                    group = f"runs/{a.point:06d}/memory"
                    if group not in f:
                        raise BadInput(f"--point {a.point}: no memory timeline recorded for this point "
                                       "(the sweep needs record: {memory: true}, and the point must have run)")
                    title = f"{attrs.get('sweep_file', '')}, point {a.point}"
                    what = plot_memory(f, f[group], title, a.output, a.device)
            else:
                table, axes = read_points(f)
                if a.rows:
                    keep = [int(r) for r in a.rows.split(",")]
                    table = {c: [v[r] for r in keep] for c, v in table.items()}
                if "ok" not in table.get("status", ["ok"]):
                    raise BadInput("every point of this sweep failed; nothing to plot "
                                   "(memwall report lists the errors)")
                if kind == "metric":
                    what = plot_metric(table, axes, attrs, a.output, a.x, a.y, a.lines)
                elif kind == "ranking":
                    serving = "ttft_s.p50" in table
                    what = plot_ranking(table, axes, attrs, a.output,
                                        a.y or ("output_tokens_per_s" if serving else "step_time_s"))
                else:
                    what = plot_fits(table, axes, attrs, a.output, a.x, a.y)
    except BadInput as e:
        print(f"memwall plot: {a.file}: {e}", file=sys.stderr)
        return 2
    except OutputFailure as e:  # -o's folder refuses the file: say so, not that the results are unreadable
        print(f"memwall plot: {e}", file=sys.stderr)
        return 2
    except (OSError, KeyError, ValueError) as e:
        print(f"memwall plot: {a.file}: unreadable memwall results ({e})".replace("\n", " "), file=sys.stderr)
        return 2
    except Exception as e:  # one line, never a traceback: a failure of ours or of matplotlib
        print(f"memwall plot: {a.file}: runtime failure: {type(e).__name__}: {e}".replace("\n", " "), file=sys.stderr)
        return 3
    print(f"memwall plot: {a.output} ({what})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
