"""What a power-limited GPU does across idle stretches, and what FP8 and attention draw
(issue 52 part 6, second visit).

1. Bursts: bf16 8192^3 GEMMs back to back for `on` ms, then the GPU idle (nothing launched,
   the host asleep) for `off` ms, over and over: a pipeline stage's work between its bubbles,
   or a rank waiting for a collective. Every GEMM is timed with CUDA events, with its start
   measured from its burst's first GEMM and the idle before that burst (event to event).
   Whether the rate at a burst's start comes back after the idle, and over how long, is what
   a governor that credits idle time has to reproduce.
2. FP8: torch._scaled_mm e4m3 x e4m3 -> bf16 on random operands, 8192^3: cold (each after
   0.3 s idle), then back to back for 20 s, then at a share of the time with idle gaps
   (torch.cuda._sleep, as gemm_duty_cycle.py does for bf16): the tensor cores' draw in FP8.
3. Attention: scaled_dot_product_attention (flash, bf16, causal, 4 x 32 heads x 8,192 x 128)
   forward, cold, then back to back for 15 s.
Run nvidia-smi beside it (power, clocks). Each section writes its CSV when it ends.
"""
import argparse
import csv
import statistics
import time

import torch
import torch.nn.functional as F


def ev():
    return torch.cuda.Event(enable_timing=True)


def write(path, rows):
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)


def timed_runs(fn, seconds, batch=20, after=None):
    """fn back to back for `seconds` (each followed by `after`, untimed, where given); each
    call's (start_s from the first, seconds)."""
    first = ev()
    first.record()
    out = []
    t0 = time.time()
    while time.time() - t0 < seconds:
        b = []
        for _ in range(batch):
            s, e = ev(), ev()
            s.record(); fn(); e.record()
            if after:
                after()
            b.append((s, e))
        torch.cuda.synchronize()
        out += [(first.elapsed_time(s) * 1e-3, s.elapsed_time(e) * 1e-3) for s, e in b]
    return out


def cool(fn, count=5, idle_s=0.3):
    ts = []
    for _ in range(count):
        torch.cuda.synchronize()
        time.sleep(idle_s)
        s, e = ev(), ev()
        s.record(); fn(); e.record()
        torch.cuda.synchronize()
        ts.append(s.elapsed_time(e) * 1e-3)
    return statistics.median(ts)


def bursts(path, seconds):
    n = 8192
    x = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    w = torch.rand(n, n, device="cuda", dtype=torch.bfloat16) * 2 - 1
    y = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    gemm = lambda: torch.mm(x, w, out=y)
    gemm(); torch.cuda.synchronize()
    full_s = cool(gemm)
    rows = [["on_ms", "off_ms", "burst", "index", "idle_before_ms", "start_ms", "seconds", "tflops"]]
    for on_ms, off_ms in ((25, 25), (50, 50), (100, 100), (200, 100), (100, 300), (400, 100), (50, 200)):
        per = max(1, round(on_ms * 1e-3 / full_s))
        t0 = time.time()
        burst, last_end = 0, None
        while time.time() - t0 < seconds:
            evs = []
            for _ in range(per):
                s, e = ev(), ev()
                s.record(); gemm(); e.record()
                evs.append((s, e))
            torch.cuda.synchronize()
            idle = last_end.elapsed_time(evs[0][0]) if last_end is not None else float("nan")
            for i, (s, e) in enumerate(evs):
                t = s.elapsed_time(e) * 1e-3
                rows.append([on_ms, off_ms, burst, i, "%.3f" % idle, "%.3f" % evs[0][0].elapsed_time(s),
                             "%.7f" % t, "%.1f" % (2.0 * n ** 3 / t / 1e12)])
            last_end = evs[-1][1]
            burst += 1
            time.sleep(off_ms * 1e-3)
        mine = [r for r in rows[1:] if r[0] == on_ms and r[1] == off_ms and r[2] >= burst // 2]
        heads = [float(r[7]) for r in mine if r[3] < 3]
        tails = [float(r[7]) for r in mine if r[3] >= per - 3]
        print("power_bursts: on %d off %d ms: %d bursts of %d; median first 3 %.0f, last 3 %.0f TFLOP/s (cool %.0f)"
              % (on_ms, off_ms, burst, per, statistics.median(heads), statistics.median(tails), 2.0 * n ** 3 / full_s / 1e12),
              flush=True)
        write(path, rows)
        time.sleep(2)


def fp8(path, seconds):
    n = 8192
    a = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.float8_e4m3fn)
    bt = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.float8_e4m3fn)
    one = torch.tensor(1.0, device="cuda")
    mm = lambda: torch._scaled_mm(a, bt.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    mm(); torch.cuda.synchronize()
    fl = 2.0 * n ** 3
    rows = [["phase", "duty", "start_s", "seconds", "tflops"]]
    c = cool(mm)
    rows.append(["cool", 1.0, 0, "%.7f" % c, "%.1f" % (fl / c / 1e12)])
    time.sleep(2)
    for start, t in timed_runs(mm, seconds):
        rows.append(["sustained", 1.0, "%.4f" % start, "%.7f" % t, "%.1f" % (fl / t / 1e12)])
    write(path, rows)
    hot = [float(r[3]) for r in rows if r[0] == "sustained"]
    print("power_bursts: fp8 %d^3 cool %.0f, last half back to back %.0f TFLOP/s" % (n, fl / c / 1e12, fl / statistics.median(hot[len(hot) // 2:]) / 1e12), flush=True)
    # Duty: each GEMM followed by an idle SM spin sized from the sleep's cycle rate.
    torch.cuda._sleep(1000)
    s, e = ev(), ev()
    s.record(); torch.cuda._sleep(10_000_000); e.record(); torch.cuda.synchronize()
    cps = 10_000_000 / (s.elapsed_time(e) * 1e-3)
    for duty in (0.8, 0.6, 0.45, 0.3):
        time.sleep(2)
        cycles = int(c * (1 - duty) / duty * cps)
        t0 = time.time()
        got = timed_runs(mm, seconds / 4, after=lambda: torch.cuda._sleep(cycles))
        wall = time.time() - t0
        share = sum(t for _, t in got) / wall
        for start, t in got:
            rows.append(["duty %.3f" % share, duty, "%.4f" % start, "%.7f" % t, "%.1f" % (fl / t / 1e12)])
        half = [t for _, t in got][len(got) // 2:]
        print("power_bursts: fp8 duty %.2f (share %.3f): median of the last half %.0f TFLOP/s" % (duty, share, fl / statistics.median(half) / 1e12), flush=True)
        write(path, rows)


def attention(path, seconds):
    B, H, S, D = 4, 32, 8192, 128
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    att = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
    att(); torch.cuda.synchronize()
    fl = 4.0 * B * H * S * S * D / 2  # causal: half of QK^T and PV
    rows = [["phase", "start_s", "seconds", "tflops"]]
    c = cool(att)
    rows.append(["cool", 0, "%.7f" % c, "%.1f" % (fl / c / 1e12)])
    time.sleep(2)
    for start, t in timed_runs(att, seconds, batch=10):
        rows.append(["sustained", "%.4f" % start, "%.7f" % t, "%.1f" % (fl / t / 1e12)])
    write(path, rows)
    hot = [float(r[2]) for r in rows if r[0] == "sustained"]
    print("power_bursts: attention fwd cool %.0f, last half back to back %.0f TFLOP/s" % (fl / c / 1e12, fl / statistics.median(hot[len(hot) // 2:]) / 1e12), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True, help="folder for bursts.csv, fp8.csv, attention.csv")
    ap.add_argument("--seconds", type=float, default=6.0, help="per burst pattern; FP8 and attention take 3x and 2.5x")
    a = ap.parse_args()
    for name, fn, secs in (("bursts", bursts, a.seconds), ("fp8", fp8, 3 * a.seconds), ("attention", attention, 2.5 * a.seconds)):
        print("== power_bursts %s %s" % (name, time.strftime("%H:%M:%S")), flush=True)
        try:
            fn("%s/%s.csv" % (a.out, name), secs)
        except Exception as e:  # one section's failure keeps the others
            print("power_bursts: %s failed: %r" % (name, e), flush=True)
        torch.cuda.empty_cache()
        time.sleep(3)


if __name__ == "__main__":
    main()
