"""The GEMM table's large rows timed at full clock (issue 52 part 6).

calibration/data/measured/*/gemm.csv timed each (layer, pass, tokens) 10 times back to back in
one long sweep, so a GPU at its power limit ran its large rows throttled. This times the rows
of `--table` with at least `--min-tokens` tokens again, each sample after `--gap-s` of idle
and a small warm-up kernel (the first kernel after idle pays a wake-up of ~175 us): the rate
at full clock, which the power limit's model (sim/timing/PowerGovernor) then holds back.
Operands random, no L2 flush needed (the idle gap's warm-up touches 2 MB). Median of 3.
Writes the same CSV columns as the table, `source` saying how it was timed.
"""
import argparse
import csv
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--table", required=True)
    ap.add_argument("-o", required=True)
    ap.add_argument("--min-tokens", type=int, default=1024)
    ap.add_argument("--gap-s", type=float, default=0.04)
    ap.add_argument("--budget-s", type=float, default=1e9)
    a = ap.parse_args()
    with open(a.table) as f:
        rows = [r for r in csv.DictReader(f)]
    cols = list(rows[0].keys())
    # Each pass's token dimension: fwd and dgrad have it as m, wgrad as k.
    todo = [r for r in rows if (int(r["k"]) if r["pass"] == "wgrad" else int(r["m"])) >= a.min_tokens]
    todo.sort(key=lambda r: float(r["flops"]))  # small first: a cut budget loses the biggest
    small = torch.rand(512, 512, device="cuda", dtype=torch.bfloat16)
    out = []
    t0 = time.time()
    src = "torch %s bf16 on %s, random data, each sample after %.0f ms idle and a warm-up kernel, median of 3" % (
        torch.__version__, torch.cuda.get_device_name(0), a.gap_s * 1e3)
    cache = {}
    for r in todo:
        if time.time() - t0 > a.budget_s:
            print("gemm_table_cool: out of time after %d rows" % len(out), flush=True)
            break
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        key = (r["pass"], m, n, k)
        if key not in cache:
            cache.clear()
            torch.cuda.empty_cache()
            rnd = lambda *shape: torch.rand(*shape, device="cuda", dtype=torch.bfloat16) - 0.5
            # The table's layouts (its README): fwd F.linear(x, W); dgrad dy @ W; wgrad dy^T @ x.
            if r["pass"] == "fwd":
                x, w = rnd(m, k), rnd(n, k)
                cache[key] = lambda: torch.nn.functional.linear(x, w)
            elif r["pass"] == "dgrad":
                dy, w = rnd(m, k), rnd(k, n)
                cache[key] = lambda: dy @ w
            else:
                dy, x = rnd(k, m), rnd(k, n)
                cache[key] = lambda: dy.t() @ x
        gemm = cache[key]
        gemm()
        times = []
        for _ in range(3):
            torch.cuda.synchronize()
            time.sleep(a.gap_s)
            torch.mm(small, small)  # the wake-up
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            gemm()
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e-3)
        row = dict(r)
        row["time_s"] = "%.6e" % statistics.median(times)
        row["samples"] = "3"
        row["source"] = src
        out.append(row)
        if len(out) % 50 == 0:
            with open(a.o, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
                w.writeheader()
                w.writerows(out)
    with open(a.o, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols, lineterminator="\n")
        w.writeheader()
        w.writerows(out)
    print("gemm_table_cool: %d of %d rows in %.0f s" % (len(out), len(todo), time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
