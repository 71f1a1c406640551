"""The rate a GEMM holds when it fills a given share of the GPU's time (issue 52 part 6).

A training step alternates GEMMs with memory-bound kernels, attention and idle gaps; under
the power limit the clocks, and so the GEMMs' rate, depend on how much of the time the
tensor cores are busy. For each duty (the GEMMs' share of the time) this runs a bf16 GEMM
followed by a filler sized to fill the rest, back to back for `--seconds`, and times every
GEMM with CUDA events; the median of the second half is the sustained rate at that duty.
Fillers: a device copy (memory-bound, HBM at full rate) and torch.cuda._sleep (an idle
SM spinning: the gap a step has waiting for communication). The gaps are sized from the
filler's rate on a GPU just woken, so the share reached differs from the one asked for: each
row records the measured share (`gemm_share`). Run nvidia-smi beside it.
"""
import argparse
import csv
import statistics
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--duties", default="1.0,0.9,0.75,0.6,0.45,0.3")
    a = ap.parse_args()
    n = a.n
    x = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    w = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    y = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    src = torch.empty(1 << 30, device="cuda", dtype=torch.uint8).random_()
    dst = torch.empty_like(src)
    flops = 2.0 * n ** 3
    # Calibrate: one GEMM cold, the copy rate, and the sleep's cycles per second.
    for _ in range(3):
        torch.mm(x, w, out=y)
    torch.cuda.synchronize()
    time.sleep(2)
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(); torch.mm(x, w, out=y); e1.record(); torch.cuda.synchronize()
    gemm_cold_s = e0.elapsed_time(e1) * 1e-3
    # Each filler once before it is timed: the first launch loads its kernel (lazy
    # loading), which on 2026-11-28 made the copy look 15x slower and its gaps too short.
    dst.copy_(src)
    torch.cuda._sleep(1000)
    torch.cuda.synchronize()
    e0.record(); dst.copy_(src); e1.record(); torch.cuda.synchronize()
    copy_bps = (1 << 30) / (e0.elapsed_time(e1) * 1e-3)
    e0.record(); torch.cuda._sleep(10_000_000); e1.record(); torch.cuda.synchronize()
    cycles_per_s = 10_000_000 / (e0.elapsed_time(e1) * 1e-3)
    print("gemm_duty_cycle: bf16 %d^3 cold %.0f TFLOP/s; copy %.0f GB/s (1 GiB, one way); sleep %.3g cycles/s"
          % (n, flops / gemm_cold_s / 1e12, copy_bps / 1e9, cycles_per_s), flush=True)
    rows = [["filler", "duty", "n", "gemms", "gemm_median_s", "tflops_median", "filler_s", "wall_s", "gemm_cold_s", "gemm_share"]]
    duties = [float(d) for d in a.duties.split(",")]
    if any(not 0 < d <= 1 for d in duties):
        ap.error("--duties: each in (0, 1]")
    for filler in ("copy", "sleep"):
        for duty in duties:
            if filler == "sleep" and duty == 1.0:
                continue
            gap_s = gemm_cold_s * (1 - duty) / duty
            copy_bytes = int(gap_s * copy_bps) // 16 * 16
            cycles = int(gap_s * cycles_per_s)
            starts, ends = [], []
            t0 = time.time()
            while time.time() - t0 < a.seconds:
                batch = []
                for _ in range(20):
                    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    s.record(); torch.mm(x, w, out=y); e.record()
                    batch.append((s, e))
                    if duty < 1.0:
                        if filler == "copy":  # as many 1-GiB copies as the gap holds, then the rest
                            left = copy_bytes
                            while left > 0:
                                step = min(left, src.numel())
                                dst[:step].copy_(src[:step])
                                left -= step
                        else:
                            torch.cuda._sleep(cycles)
                torch.cuda.synchronize()
                starts += [b[0].elapsed_time(b[1]) * 1e-3 for b in batch]
            half = starts[len(starts) // 2:]
            med = statistics.median(half)
            wall = time.time() - t0
            rows.append([filler, duty, n, len(starts), "%.7f" % med, "%.1f" % (flops / med / 1e12), "%.7f" % gap_s,
                         "%.2f" % wall, "%.7f" % gemm_cold_s,
                         "%.3f" % (sum(starts) / wall)])
            print("gemm_duty_cycle: %-5s duty %.2f: %5d GEMMs, median of the last half %.0f TFLOP/s"
                  % (filler, duty, len(starts), flops / med / 1e12), flush=True)
            with open(a.o, "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows(rows)
            time.sleep(2)  # back to idle between settings


if __name__ == "__main__":
    main()
