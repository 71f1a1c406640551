#!/usr/bin/env python3
"""Measurement rows of PyTorch's fused AdamW from the H200's per-family kernel totals.

    /usr/bin/python3 calibration/fused_adamw_from_family_kernels.py FAMILIES.csv KERNELS.csv GPU_ID > rows.csv

FAMILIES.csv is calibration/probes/family_steps.py's step table (one row per model, its
parameter count), KERNELS.csv the same run's kernel totals per family (count and total
microseconds of each kernel name over one profiled step). torch.optim.AdamW(fused=True)
runs its step as multi_tensor_apply launches of the FusedOptimizerTensorListMetadata<4>
kernel over (param, grad, exp_avg, exp_avg_sq): each parameter's four fp32 values read,
three written, 28 bytes. One row per family: its launches' mean bytes and mean time,
weighted by the launch count (samples), in memwall's measurement CSV (benchmark
elementwise.optimizer: the optimizer kernel family).
"""
import csv
import sys


def main():
    families, kernels, gpu = sys.argv[1], sys.argv[2], sys.argv[3]
    params = {r["family"]: float(r["params"]) for r in csv.DictReader(open(families)) if not r["error"]}
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gpu", "benchmark", "bytes", "time_s", "samples", "source"])
    for r in csv.DictReader(open(kernels)):
        if "FusedOptimizerTensorListMetadata<4>" not in r["kernel"] or r["family"] not in params:
            continue
        n = int(r["count"])
        out.writerow([gpu, "elementwise.optimizer", f"{28 * params[r['family']] / n:.6g}",
                      f"{float(r['total_us']) * 1e-6 / n:.6g}", n,
                      f"fused AdamW, mean of {n} launches in the {r['family']} step of hf-family-kernels.csv"])


if __name__ == "__main__":
    main()
