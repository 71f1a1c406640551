#!/usr/bin/python3
"""What a power limit would do to one GPU's replayed step: an estimate over a run file, not the replay.

  /usr/bin/python3 analysis/power_estimate.py RUN.h5 STEP_TIME_S [DEVICE]

The power model fitted on an H200 at 700 W (calibration/research/power-limits.md section 6):
tensor-core kernels (GEMMs, attention: more than 50 FLOP a byte) draw P_GEMM x^2 at a fraction x
of their full-clock rate; memory-bound kernels draw P_IDLE plus (P_COPY - P_IDLE) times their
share of the HBM peak (BW_PEAK: the H100's 3.35 TB/s); the rest of the step idles at P_IDLE.
One average over the step, the tensor-core work slowed by 1/x until it is at the limit; the
step grows by what that adds (the tensor-core work taken as on the critical path). The GPU's compute stream only.
"""
import sys

import h5py

P_LIM, P_IDLE, P_GEMM, P_COPY, BW_PEAK = 700.0, 135.0, 1000.0, 480.0, 3.35e12


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    path, step = sys.argv[1], float(sys.argv[2])
    ops = h5py.File(path, "r")["ops"]
    c = {k: ops[k][()] for k in ops.keys()}
    dec = lambda x: x.decode() if isinstance(x, bytes) else x
    device = sys.argv[3] if len(sys.argv) > 3 else sorted({dec(d) for d in c["device"]})[0]
    tensor_s = memory_s = memory_energy = 0.0
    for i in range(len(c["name"])):
        if dec(c["device"][i]) != device or dec(c["kind"][i]) != "kernel" or dec(c["stream"][i]) != "compute":
            continue
        busy, flops, moved = float(c["busy_s"][i]), float(c["flops"][i]), float(c["bytes"][i])
        if flops > 0 and flops / max(moved, 1) > 50:
            tensor_s += busy
        else:
            memory_s += busy
            memory_energy += busy * (P_IDLE + (P_COPY - P_IDLE) * min(1.0, moved / max(busy, 1e-12) / BW_PEAK))

    def power(x):
        t = step + tensor_s * (1 / x - 1)
        idle = max(t - tensor_s / x - memory_s, 0)
        return (tensor_s * P_GEMM * x + memory_energy + idle * P_IDLE) / t

    x = 1.0
    if power(1.0) > P_LIM:
        lo, hi = 0.3, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if power(mid) > P_LIM else (mid, hi)
        x = lo
    print("%s: step %.4f s, tensor-core %.1f %%, memory-bound %.1f %%; %.0f W at full clock; x = %.3f; "
          "step -> %.4f s (+%.1f %%)" % (device, step, 100 * tensor_s / step, 100 * memory_s / step, power(1.0), x,
                                        step + tensor_s * (1 / x - 1), 100 * tensor_s * (1 / x - 1) / step))


if __name__ == "__main__":
    main()
