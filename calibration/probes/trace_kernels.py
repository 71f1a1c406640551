"""Per kernel name, the count and microseconds in a torch.profiler chrome trace."""
import json


def kernel_summary(trace_path):
    with open(trace_path) as f:
        events = json.load(f)["traceEvents"]
    out = {}
    for e in events:
        if e.get("cat") == "kernel":
            k = out.setdefault(e["name"], [0, 0.0])
            k[0] += 1
            k[1] += float(e["dur"])
    return out
