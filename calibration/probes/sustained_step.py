"""A training step's GEMMs cold and after a minute of back-to-back steps (issue 52 part 6).

What it measures: a Llama-3-8B-shaped decoder (4 of its layers, its vocabulary) trained as a
plain PyTorch / Hugging Face stack runs it (fp32 parameters under bf16 autocast, sdpa
attention, fused AdamW), one step profiled after a few seconds idle and one after `--seconds`
of steps with no gap. Every kernel's time is summed by name for both, so the GEMMs' rate in
a step the GPU has held at its power limit can be set against the same GEMMs cold (the
rate every GEMM table, and memwall's fitted profile, measures). Note the "cold" step lasts
~0.3 s, far past the few ms the clocks take to fall: cold against warm compares a GPU at the
limit for 0.3 s with one at it for a minute (its temperature), not burst against throttled. Run
nvidia-smi beside it for the clocks and power over the same minute.

Writes JSON: the device, the step times over the run, and per kernel name the count and
microseconds in the cold and the warm step. Needs a CUDA GPU, torch and transformers.
"""
import argparse
import gzip
import json
import os
import shutil
import time

import torch
import transformers
from torch_steps import kernel_summary, train_step
from transformers import AutoModelForCausalLM, LlamaConfig


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True)
    ap.add_argument("--trace", help="gzip the warm step's chrome trace here")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--seq", type=int, default=8192)
    a = ap.parse_args()
    free, total = torch.cuda.mem_get_info()
    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=a.layers,
                      num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                      max_position_embeddings=a.seq, rope_theta=500000.0)
    with torch.device("cuda"):
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device="cuda")

    def step():
        train_step(model, opt, ids)

    def profiled(path):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
            step()
            torch.cuda.synchronize()
        p.export_chrome_trace(path)
        return kernel_summary(path)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    time.sleep(3)  # idle: the clocks return to their boost before the cold step
    cold = profiled("/tmp/cold_step.json")
    steps = []
    t0 = time.time()
    while time.time() - t0 < a.seconds:
        s = time.time()
        step()
        torch.cuda.synchronize()
        steps.append([round(s - t0, 4), round(time.time() - s, 6)])
    warm = profiled("/tmp/warm_step.json")
    if a.trace:
        with open("/tmp/warm_step.json", "rb") as src, gzip.open(a.trace, "wb") as dst:
            shutil.copyfileobj(src, dst)
    result = {
        "what": "Llama-3-8B-shaped decoder, %d layers, micro-batch %d x %d tokens, fp32 params, bf16 autocast, "
                "sdpa, fused AdamW; kernels of one profiled step cold (3 s idle before) and warm (after the "
                "steps listed, back to back)" % (a.layers, a.batch, a.seq),
        "device": torch.cuda.get_device_name(0),
        "mem_get_info_bytes": [free, total],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "params": sum(p.numel() for p in model.parameters()),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
        "steps_start_and_seconds": steps,
        "cold_kernels_count_us": cold,
        "warm_kernels_count_us": warm,
    }
    with open(a.o, "w") as f:
        json.dump(result, f, indent=0, sort_keys=True)
    gemm = lambda ks: sum(v[1] for n, v in ks.items() if any(t in n.lower() for t in ("nvjet", "gemm", "xmma", "cutlass")))
    print("sustained_step: %d steps in %.0f s; first %.4f s, last %.4f s; GEMM kernels cold %.0f us, warm %.0f us"
          % (len(steps), a.seconds, steps[0][1], steps[-1][1], gemm(cold), gemm(warm)), flush=True)


if __name__ == "__main__":
    main()
