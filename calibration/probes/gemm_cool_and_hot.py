"""Each GEMM of a step timed cool and hot, and the clocks' fall from idle (issue 52 part 6).

Cool: one GEMM after 0.3 s idle (the clocks stay at their boost over such a gap, and the
power average empties), the median of 6 after a warm-up. Hot: 30 back to back, the median
of the last 10 (the sustained stream, as a table timing each shape 10 times back to back
measures its long shapes). Shapes: the Llama-3-8B-shaped step of sustained_step.py
(16,384 tokens), each pass of each linear layer, so that the step's own kernel times (its
trace) can be set against both. Then the onset: after 1 s idle, 40 bf16 8192^3 GEMMs back to
back, each timed with events, three times; and 200 of 4096^3.
"""
import argparse
import csv
import statistics
import time

import torch


def timed(fn):
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    fn()
    e.record()
    return s, e


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--onset", required=True)
    a = ap.parse_args()
    T = 16384
    layers = {"q": (4096, 4096), "k": (1024, 4096), "gate": (14336, 4096), "down": (4096, 14336), "head": (128256, 4096)}
    rows = [["layer", "pass", "m", "n", "k", "flops", "cool_s", "hot_s", "cool_tflops", "hot_tflops"]]
    for name, (n_out, k_in) in layers.items():
        x = torch.rand(T, k_in, device="cuda", dtype=torch.bfloat16) - 0.5
        w = torch.rand(n_out, k_in, device="cuda", dtype=torch.bfloat16) - 0.5
        dy = torch.rand(T, n_out, device="cuda", dtype=torch.bfloat16) - 0.5
        passes = {"fwd": (lambda: torch.nn.functional.linear(x, w), (T, n_out, k_in)),
                  "dgrad": (lambda: dy @ w, (T, k_in, n_out)),
                  "wgrad": (lambda: dy.t() @ x, (n_out, k_in, T))}
        for p, (fn, (m, n, k)) in passes.items():
            fn()
            torch.cuda.synchronize()
            cool = []
            for _ in range(6):
                time.sleep(0.3)
                s, e = timed(fn)
                torch.cuda.synchronize()
                cool.append(s.elapsed_time(e) * 1e-3)
            evs = [timed(fn) for _ in range(30)]
            torch.cuda.synchronize()
            hot = [s.elapsed_time(e) * 1e-3 for s, e in evs][-10:]
            c, h = statistics.median(cool), statistics.median(hot)
            fl = 2.0 * m * n * k
            rows.append([name, p, m, n, k, fl, "%.7f" % c, "%.7f" % h, "%.1f" % (fl / c / 1e12), "%.1f" % (fl / h / 1e12)])
            print("gemm_cool_and_hot: %-5s %-5s %6d %6d %6d  cool %.0f  hot %.0f TFLOP/s" % (name, p, m, n, k, fl / c / 1e12, fl / h / 1e12), flush=True)
            with open(a.o, "w", newline="") as f:
                csv.writer(f, lineterminator="\n").writerows(rows)
        del x, w, dy
        torch.cuda.empty_cache()
    onset = [["n", "repeat", "index", "start_ms", "seconds", "tflops"]]
    for n, count in ((8192, 40), (4096, 200)):
        xa = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        xb = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) - 0.5
        torch.mm(xa, xb)
        for rep in range(3):
            torch.cuda.synchronize()
            time.sleep(1.0)
            first = torch.cuda.Event(enable_timing=True)
            first.record()
            evs = [timed(lambda: torch.mm(xa, xb)) for _ in range(count)]
            torch.cuda.synchronize()
            for i, (s, e) in enumerate(evs):
                t = s.elapsed_time(e) * 1e-3
                onset.append([n, rep, i, "%.4f" % first.elapsed_time(s), "%.7f" % t, "%.1f" % (2.0 * n ** 3 / t / 1e12)])
            r = [2.0 * n ** 3 / (s.elapsed_time(e) * 1e-3) / 1e12 for s, e in evs]
            print("gemm_cool_and_hot: onset %d^3 rep %d: first 3 %.0f %.0f %.0f, middle %.0f, last %.0f TFLOP/s"
                  % (n, rep, r[0], r[1], r[2], r[len(r) // 2], r[-1]), flush=True)
        with open(a.onset, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(onset)


if __name__ == "__main__":
    main()
