"""What GEMMs that wait on HBM draw at the power limit (issue 52 part 6, a third visit).

The replay holds only the part of a GEMM's time its tiles' compute takes (KernelTiming's
clocked part) and draws the rest as a memory-bound kernel. This times, back to back for
`--seconds` each, with CUDA events:
1. decode: bf16 [8 x 8192] @ [8192 x 8192]^T (128 MiB of weights streamed per GEMM): the
   tokens of a decode step; whether it slows under the limit.
2. medium: [256 x 8192] @ [8192 x 8192]^T, partly compute-bound.
3. big + decode: one 8192^3 GEMM, then decode GEMMs for about as long again; and
   big + sleep: the same with the GPU idle-spinning (torch.cuda._sleep) instead: how much
   the decode GEMMs spend of the power budget the big ones then lack.
Run nvidia-smi beside it. Writes one CSV: case, kind, window (s from the case's start, per
0.25 s), calls, their median seconds.
"""
import argparse
import csv
import statistics
import time

import torch


def ev():
    return torch.cuda.Event(enable_timing=True)


def run(case, fns, seconds, rows):
    """fns: [(kind, fn)] run in turn, over and over; each call timed."""
    first = ev()
    first.record()
    t0 = time.time()
    got = []
    while time.time() - t0 < seconds:
        batch = []
        for _ in range(10):
            for kind, fn in fns:
                s, e = ev(), ev()
                s.record(); fn(); e.record()
                batch.append((kind, s, e))
        torch.cuda.synchronize()
        got += [(kind, first.elapsed_time(s) * 1e-3, s.elapsed_time(e) * 1e-3) for kind, s, e in batch]
    windows = {}
    for kind, start, t in got:  # per kind and 0.25-s window: the calls' median
        windows.setdefault((kind, int(start / 0.25)), []).append(t)
    for (kind, w), ts in sorted(windows.items()):
        rows.append([case, kind, "%.2f" % (w * 0.25), len(ts), "%.8f" % statistics.median(ts)])
    for kind in sorted({k for k, _ in fns}):
        ts = [t for k, _, t in got if k == kind]
        print("power_mixed: %-12s %-6s first 5 %.1f us, last half %.1f us (%d calls)"
              % (case, kind, statistics.median(ts[1:6]) * 1e6, statistics.median(ts[len(ts) // 2:]) * 1e6, len(ts)),
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--seconds", type=float, default=8.0)
    a = ap.parse_args()
    n = 8192
    w = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
    big = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
    x8 = torch.rand(8, n, device="cuda", dtype=torch.bfloat16) - 0.5
    x256 = torch.rand(256, n, device="cuda", dtype=torch.bfloat16) - 0.5
    y = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    decode = lambda: torch.nn.functional.linear(x8, w)
    medium = lambda: torch.nn.functional.linear(x256, w)
    gemm = lambda: torch.mm(big, w, out=y)
    for f in (decode, medium, gemm):
        f()
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    # Sizes from a GPU just warmed: decode GEMMs for as long as a big GEMM, and the sleep
    # cycles for the same time.
    def med(fn, k=20):
        ts = []
        for _ in range(k):
            s, e = ev(), ev()
            s.record(); fn(); e.record()
            torch.cuda.synchronize()
            ts.append(s.elapsed_time(e) * 1e-3)
        return statistics.median(ts)
    t_big, t_dec = med(gemm, 5), med(decode)
    s, e = ev(), ev()
    s.record(); torch.cuda._sleep(10_000_000); e.record(); torch.cuda.synchronize()
    cps = 10_000_000 / (s.elapsed_time(e) * 1e-3)
    count = max(1, round(t_big / t_dec))
    cycles = int(t_big * cps)
    print("power_mixed: big %.0f us, decode %.1f us (%d per big), sleep %.3g cycles/s" % (t_big * 1e6, t_dec * 1e6, count, cps), flush=True)
    def decodes():
        for _ in range(count):
            decode()
    rows = [["case", "kind", "window_s", "calls", "median_s"]]
    cases = [("decode", [("decode", decode)]),
             ("medium", [("medium", medium)]),
             ("big+decode", [("big", gemm), ("decodes", decodes)]),
             ("big+sleep", [("big", gemm), ("sleep", lambda: torch.cuda._sleep(cycles))])]
    for case, fns in cases:
        time.sleep(3)
        run(case, fns, a.seconds, rows)
        with open(a.o, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(rows)


if __name__ == "__main__":
    main()
