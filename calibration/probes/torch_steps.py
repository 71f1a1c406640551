"""What the PyTorch probes share: one Hugging Face training step, and a trace's kernels by name."""
import json

import torch


def train_step(model, opt, ids):
    """One step as a plain loop runs it: bf16 autocast, loss from labels, backward, optimizer."""
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def kernel_summary(trace_path):
    """Per kernel name, the count and microseconds in a torch.profiler chrome trace."""
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        if e.get("cat") == "kernel":
            k = out.setdefault(e["name"], [0, 0.0])
            k[0] += 1
            k[1] += float(e["dur"])
    return out
