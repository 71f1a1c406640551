"""One training step of each model family transformers ships, as a plain PyTorch loop runs it (issue 54).

Each family is built from its published config (random init; where the whole model would not
fit with fp32 parameters and AdamW on one GPU, fewer layers or experts, said in the row),
fp32 parameters under bf16 autocast, sdpa attention where the family takes it, fused AdamW,
the loss from `labels` (no gradient clipping: the Trainer's max_grad_norm adds a norm and a
scale over the gradients). Per family: step time (median of 5 after 3 warm-ups, CUDA-synchronised
wall clock), memory after the model is built, after the first step (optimizer states made),
the peak over the timed steps (allocated and reserved), and per kernel name the count and
microseconds of one profiled step. `--trace NAME=PATH` gzips that family's chrome trace
(CPU ops with shapes and memory) for a kernel-by-kernel inventory.
"""
import argparse
import csv
import gzip
import shutil
import statistics
import time

import torch
import transformers
from torch_steps import kernel_summary, train_step
from transformers import AutoConfig, AutoModelForCausalLM

GiB = 1 << 30

# (name, model_type, config keys from the published config.json, note on what was cut)
FAMILIES = [
    ("gpt2", "gpt2", dict(n_embd=768, n_layer=12, n_head=12, vocab_size=50257, n_positions=1024), ""),
    ("gpt2-medium", "gpt2", dict(n_embd=1024, n_layer=24, n_head=16, vocab_size=50257, n_positions=1024), ""),
    ("gpt2-xl", "gpt2", dict(n_embd=1600, n_layer=48, n_head=25, vocab_size=50257, n_positions=1024), ""),
    ("opt-1.3b", "opt", dict(hidden_size=2048, num_hidden_layers=24, ffn_dim=8192, num_attention_heads=32,
                             vocab_size=50272, max_position_embeddings=2048, word_embed_proj_dim=2048,
                             do_layer_norm_before=True), ""),
    ("pythia-1.4b", "gpt_neox", dict(hidden_size=2048, num_hidden_layers=24, num_attention_heads=16,
                                     intermediate_size=8192, vocab_size=50304, rotary_pct=0.25,
                                     use_parallel_residual=True, max_position_embeddings=2048,
                                     tie_word_embeddings=False), ""),
    ("llama-3.2-1b", "llama", dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                                   num_key_value_heads=8, intermediate_size=8192, vocab_size=128256,
                                   head_dim=64, tie_word_embeddings=True, rope_theta=500000.0,
                                   max_position_embeddings=131072), ""),
    ("mistral-7b-8l", "mistral", dict(hidden_size=4096, num_hidden_layers=8, num_attention_heads=32,
                                      num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                                      sliding_window=None), "8 of 32 layers"),
    ("qwen2-1.5b", "qwen2", dict(hidden_size=1536, num_hidden_layers=28, num_attention_heads=12,
                                 num_key_value_heads=2, intermediate_size=8960, vocab_size=151936,
                                 tie_word_embeddings=True, max_position_embeddings=131072), ""),
    ("qwen3-1.7b", "qwen3", dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=16,
                                 num_key_value_heads=8, head_dim=128, intermediate_size=6144,
                                 vocab_size=151936, tie_word_embeddings=True), ""),
    ("gemma2-2b", "gemma2", dict(hidden_size=2304, num_hidden_layers=26, num_attention_heads=8,
                                 num_key_value_heads=4, head_dim=256, intermediate_size=9216,
                                 vocab_size=256000, sliding_window=4096, attn_logit_softcapping=50.0,
                                 final_logit_softcapping=30.0, query_pre_attn_scalar=256), ""),
    ("gemma3-1b", "gemma3_text", dict(hidden_size=1152, num_hidden_layers=26, num_attention_heads=4,
                                      num_key_value_heads=1, head_dim=256, intermediate_size=6912,
                                      vocab_size=262144, sliding_window=512, query_pre_attn_scalar=256), ""),
    ("phi3-mini", "phi3", dict(hidden_size=3072, num_hidden_layers=32, num_attention_heads=32,
                               num_key_value_heads=32, intermediate_size=8192, vocab_size=32064,
                               max_position_embeddings=4096), ""),
    ("mixtral-8x7b-2l", "mixtral", dict(hidden_size=4096, num_hidden_layers=2, num_attention_heads=32,
                                        num_key_value_heads=8, intermediate_size=14336, vocab_size=32000,
                                        num_local_experts=8, num_experts_per_tok=2), "2 of 32 layers"),
    ("qwen1.5-moe-a2.7b-4l", "qwen2_moe", dict(hidden_size=2048, num_hidden_layers=4, num_attention_heads=16,
                                               num_key_value_heads=16, intermediate_size=5632,
                                               moe_intermediate_size=1408, shared_expert_intermediate_size=5632,
                                               num_experts=60, num_experts_per_tok=4, vocab_size=151936),
     "4 of 24 layers"),
    ("qwen3-30b-a3b-4l", "qwen3_moe", dict(hidden_size=2048, num_hidden_layers=4, num_attention_heads=32,
                                           num_key_value_heads=4, head_dim=128, intermediate_size=6144,
                                           moe_intermediate_size=768, num_experts=128, num_experts_per_tok=8,
                                           vocab_size=151936), "4 of 48 layers"),
    ("gpt-oss-20b-2l", "gpt_oss", dict(hidden_size=2880, num_hidden_layers=2, num_attention_heads=64,
                                       num_key_value_heads=8, head_dim=64, intermediate_size=2880,
                                       num_local_experts=32, num_experts_per_tok=4, vocab_size=201088,
                                       sliding_window=128), "2 of 24 layers"),
    ("deepseek-v3-2l-16e", "deepseek_v3", dict(num_hidden_layers=2, first_k_dense_replace=1, n_routed_experts=16,
                                               num_experts_per_tok=8, n_group=8, topk_group=4),
     "2 of 61 layers (1 dense, 1 MoE), 16 of 256 routed experts"),
]


def run_family(name, model_type, keys, batch, seq, compile_model, trace_to):
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    cfg = AutoConfig.for_model(model_type, **keys)
    with torch.device("cuda"):
        try:
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
        except (ValueError, NotImplementedError) as e:
            print("%s: sdpa refused (%s); eager attention" % (name, str(e).splitlines()[0][:80]), flush=True)
            model = AutoModelForCausalLM.from_config(cfg, attn_implementation="eager")
    attn = getattr(model.config, "_attn_implementation", "?")
    model.train()
    params = sum(p.numel() for p in model.parameters())
    after_build = torch.cuda.memory_allocated() - base
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=True)
    ids = torch.randint(0, cfg.vocab_size, (batch, seq), device="cuda")
    fwd = torch.compile(model) if compile_model else model

    def step():
        train_step(fwd, opt, ids)

    step()
    torch.cuda.synchronize()
    after_first = torch.cuda.memory_allocated() - base
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(5):
        s = time.time()
        step()
        torch.cuda.synchronize()
        times.append(time.time() - s)
    peak_alloc = torch.cuda.max_memory_allocated() - base
    peak_reserved = torch.cuda.max_memory_reserved()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                record_shapes=trace_to is not None, profile_memory=trace_to is not None) as p:
        step()
        torch.cuda.synchronize()
    p.export_chrome_trace("/tmp/family_step.json")
    if trace_to:
        with open("/tmp/family_step.json", "rb") as src, gzip.open(trace_to, "wb") as dst:
            shutil.copyfileobj(src, dst)
    ks = kernel_summary("/tmp/family_step.json")
    del opt, model, fwd
    torch.cuda.empty_cache()
    return dict(params=params, attn=attn, after_build=after_build, after_first=after_first, peak_alloc=peak_alloc,
                peak_reserved=peak_reserved, step_s=statistics.median(times), steps_s=times), ks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-o", required=True, help="one row per family")
    ap.add_argument("--kernels", required=True, help="one row per family and kernel name")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--trace", action="append", default=[], help="NAME=PATH.json.gz")
    ap.add_argument("--only", help="comma-separated family names")
    ap.add_argument("--budget-s", type=float, default=1e9, help="start no family after this many seconds")
    a = ap.parse_args()
    traces = dict(t.split("=", 1) for t in a.trace)
    free, total = torch.cuda.mem_get_info()
    print("family_steps: %s, mem_get_info free %d total %d bytes (%.2f GiB), torch %s, transformers %s"
          % (torch.cuda.get_device_name(0), free, total, total / GiB, torch.__version__, transformers.__version__),
          flush=True)
    t0 = time.time()
    runs = [(n, t, k, note, False) for n, t, k, note in FAMILIES]
    runs.append(("llama-3.2-1b+compile", "llama", FAMILIES[5][2], "torch.compile(model)", True))
    if a.only:
        runs = [r for r in runs if r[0] in a.only.split(",")]
    with open(a.o, "w", newline="") as f, open(a.kernels, "w", newline="") as g:
        rows = csv.writer(f, lineterminator="\n")
        rows.writerow(["family", "model_type", "note", "device", "batch", "seq", "params", "attn_implementation",
                       "bytes_after_build", "bytes_after_first_step", "peak_allocated_bytes", "peak_reserved_bytes",
                       "step_s_median", "steps_s", "error"])
        kern = csv.writer(g, lineterminator="\n")
        kern.writerow(["family", "kernel", "count", "total_us"])
        for name, model_type, keys, note, comp in runs:
            if time.time() - t0 > a.budget_s:
                print("family_steps: out of time before %s" % name, flush=True)
                break
            try:
                r, ks = run_family(name, model_type, keys, a.batch, a.seq, comp, traces.get(name))
                rows.writerow([name, model_type, note, torch.cuda.get_device_name(0), a.batch, a.seq, r["params"],
                               r["attn"], r["after_build"], r["after_first"], r["peak_alloc"], r["peak_reserved"],
                               "%.6f" % r["step_s"], " ".join("%.6f" % t for t in r["steps_s"]), ""])
                for kname, (count, us) in sorted(ks.items()):
                    kern.writerow([name, kname, count, "%.3f" % us])
                print("family_steps: %-22s %6.2fB params, %s, step %.4f s, peak %.2f GiB allocated"
                      % (name, r["params"] / 1e9, r["attn"], r["step_s"], r["peak_alloc"] / GiB), flush=True)
            except Exception as e:  # one family's failure is a row, not the end of the run
                msg = ("%s: %s" % (type(e).__name__, e)).splitlines()[0][:300]
                rows.writerow([name, model_type, note, "", a.batch, a.seq, "", "", "", "", "", "", "", "", msg])
                print("family_steps: %s failed: %s" % (name, msg), flush=True)
                torch.cuda.empty_cache()
            f.flush()
            g.flush()


if __name__ == "__main__":
    main()
