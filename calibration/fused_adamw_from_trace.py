#!/usr/bin/env python3
"""Measurement rows of PyTorch's fused AdamW from a torch.profiler trace of a training step.

    /usr/bin/python3 calibration/fused_adamw_from_trace.py TRACE.json.gz GPU_ID PARAMS > rows.csv

torch.optim.AdamW(fused=True) runs its step as multi_tensor_apply launches of the
FusedOptimizerTensorListMetadata<4> kernel over (param, grad, exp_avg, exp_avg_sq): each
parameter's four fp32 values read, three written, 28 bytes. PARAMS is the model's
parameter count; a launch's share of the bytes is its share of the step's thread blocks
(each block takes one chunk of one tensor). One row per launch, in memwall's measurement
CSV (benchmark elementwise.optimizer: the optimizer kernel family).
"""
import csv
import gzip
import json
import sys


def main():
    trace, gpu, params = sys.argv[1], sys.argv[2], float(sys.argv[3])
    with gzip.open(trace, "rt") as f:
        events = json.load(f)["traceEvents"]
    launches = [e for e in events if e.get("cat") == "kernel" and "FusedOptimizerTensorListMetadata<4>" in e["name"]]
    blocks = sum(e["args"]["grid"][0] for e in launches)
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["gpu", "benchmark", "bytes", "time_s", "samples", "source"])
    for e in sorted(launches, key=lambda e: e["ts"]):
        share = e["args"]["grid"][0] / blocks
        out.writerow([gpu, "elementwise.optimizer", f"{28 * params * share:.6g}", f"{e['dur'] * 1e-6:.6g}", 1,
                      f"fused AdamW launch of {e['args']['grid'][0]} blocks in {trace.split('/')[-1]}"])


if __name__ == "__main__":
    main()
