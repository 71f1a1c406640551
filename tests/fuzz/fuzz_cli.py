#!/usr/bin/env python3
"""Mutation fuzzer of memwall's command line: specs, --set values, sweep specs, layout
searches (optimize's options), request traces, PyTorch profiler traces and HDF5 results
files, each mutated from a valid seed and fed to the binary.

Every case must end with exit code 0, 2 (bad input) or 3 (runtime failure), within the
time limit, with exactly one line on stderr when it fails, and without leaving an
output file (or a temporary file beside one) behind after an error. Anything else is
a finding: the case's files are kept under --keep and the run exits 1.

  tests/fuzz/fuzz_cli.py --binary build/memwall --cases 300 --seed 1   # the CI corpus
  make fuzz N=5000                                                     # a longer hunt

Beyond its exit code every case is held to invariants: no input file changes (an output
never replaces an input), and a run that exits 0 reports numbers inside physical bounds.
The hostile generators (hostile.py) make results files that pass the checksum but not
the structure, HF configs, profiles and JSONL traces mutated, YAML alias loops and
bombs, outputs that are links to inputs, and two processes writing one output.

The same seed gives the same cases. Standard library only, and h5py where the
interpreter has it (Debian's /usr/bin/python3 after scripts/install_deps.sh): without
it, structural cases of results files become byte mutations stamped again.
"""
import argparse
import concurrent.futures
import gzip
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import hostile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# Small, fast seeds: each runs in well under a second.
SPEC_SEEDS = {
    "train.yaml": "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                  "training: {seq_len: 256, global_batch: 4, micro_batch: 1, precision: bf16}\n",
    "train_tp.yaml": "hardware:\n  node: dgx-a100\n  gpus_per_node: 4\nmodel:\n  preset: gpt2\ntraining:\n"
                     "  seq_len: 512\n  global_batch: 8\n  micro_batch: 2\n  tp: 2\n  zero: 1\n"
                     "  recompute: selective\n",
    "offload.yaml": "hardware: {node: desktop-4070}\nmodel: {preset: gpt2-medium}\n"
                    "training: {seq_len: 256, global_batch: 2, micro_batch: 1, zero: 2, offload: {optimizer: cpu}}\n",
    # one GPU with a fitted profile: an override the profile makes moot (a peak, the HBM
    # bandwidth) is refused, not run with MFU or a link past 100 %
    "train_h100.yaml": "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                       "training: {seq_len: 256, global_batch: 4, micro_batch: 2}\n",
    # a Clos of racks and pods over four nodes, rail-optimised, its pods' up-links at 1:4
    "clos.yaml": "hardware:\n  node: dgx-h100\n  nodes: 4\n  network:\n    rail_optimized: true\n"
                 "    tiers: [{name: rack, nodes: 2}, {name: pod, nodes: 4, oversubscription: 4}]\n"
                 "model: {preset: gpt2}\ntraining: {seq_len: 256, global_batch: 32, micro_batch: 1}\n",
    "serve.yaml": "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                  "inference:\n  poisson: {rate: 20, requests: 8, prompt_len: 64, output_len: 16}\n"
                  "  max_num_seqs: 4\n",
    "serve_trace.yaml": "hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
                        "inference: {trace: trace.csv, max_num_seqs: 8}\n",
    "unified.yaml": "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                    "training: {seq_len: 1024, global_batch: 16, micro_batch: 16}\n"
                    "memory: {mode: unified, prefetch: layer, eviction: lru, start: cold}\n",
    "serve_unified.yaml": "hardware: {node: desktop-4070}\nmodel: {preset: gpt2}\n"
                          "inference: {batch: 2, prompt_len: 64, output_len: 4}\n"
                          "memory: {managed: [weights, activations], accessed_by: [weights]}\n",
    "serve_percent.yaml": "hardware: {node: cloud-t4}\nmodel: {preset: gpt2}\n"
                          "inference: {batch: 4, prompt_len: 64, output_len: 2, gpu_batches: 2, offload: "
                          "{percent: {weights: [20, 50, 30], kv: [0, 100, 0], activations: [50, 0, 50]}}}\n",
    "serve_vllm_release.yaml": "hardware: {node: desktop-3090}\nmodel: {preset: llama-2-7b, layers: 2}\n"
                               "inference: {engine_release: '0.2.5', max_model_len: 4096, batch: 2, prompt_len: 64, "
                               "output_len: 4}\n",
    "serve_sglang.yaml": "hardware: {node: cloud-l4}\nmodel: {preset: llama-2-7b, layers: 2}\n"
                         "inference: {engine: sglang, engine_release: '0.4.7.post1', mem_fraction_static: 0.8, "
                         "poisson: {rate: 20, requests: 6, prompt_len: 64, output_len: 8}}\n",
    "serve_hf_offload.yaml": "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b, layers: 2}\n"
                             "inference: {engine: hf, offload_hooks: deepspeed, batch: 2, prompt_len: 64, "
                             "output_len: 4, offload: {weights: cpu}}\n",
    "serve_hf.yaml": "hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {preset: llama-2-7b, layers: 2}\n"
                     "inference: {engine: hf, weight_dtype: bf16, batch: 2, prompt_len: 64, output_len: 4}\n",
    "serve_flexgen.yaml": "hardware: {node: cloud-t4}\nmodel: {preset: opt-6.7b, layers: 2}\n"
                          "inference: {batch: 4, prompt_len: 64, output_len: 2, gpu_batches: 2, gpu_memory_utilization: 1.0, "
                          "offload: {attention: cpu, pinned: false, percent: {weights: [0, 50, 50], kv: [0, 0, 100], "
                          "activations: [0, 100, 0]}}}\n",
    "custom.yaml": "hardware:\n  node:\n    name: box\n    gpu: {preset: rtx-4090, memory_bytes: 24e9}\n    gpus: 2\n"
                   "    dram_bytes: 64e9\nmodel: {layers: 4, hidden: 256, heads: 4, vocab: 1000}\n"
                   "training: {seq_len: 128, global_batch: 4, micro_batch: 1}\n",
    "moe_train.yaml": "hardware: {node: dgx-h100, gpus_per_node: 8}\n"
                      "model: {layers: 4, hidden: 256, heads: 4, vocab: 1000, mlp: swiglu, num_experts: 8, "
                      "experts_per_token: 2, shared_experts: 1, moe_ffn_hidden: 128, first_k_dense: 1, "
                      "kv_lora_rank: 64, q_lora_rank: 96, qk_rope_head_dim: 16, qk_nope_head_dim: 32, v_head_dim: 32, "
                      "hot_expert_tokens: 0.3}\n"
                      "training: {seq_len: 256, global_batch: 4, micro_batch: 1, pp: 2, ep: 2, cp: 2, "
                      "first_stage_layers: 1, last_stage_layers: 3, zero: 1}\n",
    "moe_serve.yaml": "hardware: {node: dgx-h100, gpus_per_node: 2}\nmodel: {preset: mixtral-8x7b, layers: 2}\n"
                      "inference: {tp: 2, ep: 2, poisson: {rate: 20, requests: 6, prompt_len: 64, output_len: 8}}\n",
    "moe_fold.yaml": "hardware: {node: dgx-h100, gpus_per_node: 4, nodes: 2}\n"
                     "model: {layers: 2, hidden: 256, heads: 4, vocab: 1000, mlp: swiglu, num_experts: 8, "
                     "experts_per_token: 2, moe_ffn_hidden: 128, expert_groups: 2, groups_per_token: 1}\n"
                     "training: {seq_len: 256, global_batch: 8, micro_batch: 1, tp: 2, sp: true, ep: 8, etp: 1, "
                     "moe_dispatcher: deepep, precision: fp8, zero: 1}\n",
    "train_pytorch.yaml": "hardware: {node: desktop-4070}\nmodel: {preset: gpt2, layers: 2}\n"
                          "training: {stack: pytorch, seq_len: 256, global_batch: 4, micro_batch: 2, optimizer: adamw, "
                          "allocator: caching}\n",
    "train_deepspeed.yaml": "hardware: {node: dgx-a100, gpus_per_node: 4}\n"
                            "model: {preset: gpt2, layers: 2}\n"
                            "training: {stack: deepspeed, zero: 3, seq_len: 256, global_batch: 8, micro_batch: 1, "
                            "recompute: full, deepspeed: {overlap_comm: false, per_parameter_collectives: true, "
                            "stage3_max_reuse_distance: 100000}}\n",
    "train_fsdp.yaml": "hardware: {node: dgx-h100, gpus_per_node: 4}\n"
                       "model: {preset: llama-3-8b, layers: 2}\n"
                       "training: {stack: fsdp, seq_len: 256, global_batch: 8, micro_batch: 1, recompute: selective}\n",
    "train_fsdp_3d.yaml": "hardware: {node: dgx-h100, gpus_per_node: 4, nodes: 2}\n"
                          "model: {preset: llama-3-8b, layers: 6}\n"
                          "training: {stack: fsdp, seq_len: 256, global_batch: 8, micro_batch: 1, tp: 2, sp: true, "
                          "pp: 2, pipeline_schedule: interleaved, virtual_stages: 2, "
                          "account_for_embedding_in_pipeline_split: true, account_for_loss_in_pipeline_split: true}\n",
    "train_fsdp_2d_float8.yaml": "hardware: {node: dgx-h100, gpus_per_node: 4, nodes: 2}\n"
                                 "model: {preset: llama-3-8b, layers: 3}\n"
                                 "training: {stack: fsdp, seq_len: 256, global_batch: 8, micro_batch: 1, tp: 2, "
                                 "sp: true, pp: 2, recompute: full, fsdp: {torch: '2.6', compile: true, "
                                 "float8: tensorwise, async_tp: true}}\n",
    "moe_serve_dp.yaml": "hardware: {node: dgx-h100, gpus_per_node: 4}\nmodel: {preset: qwen3-30b-a3b, layers: 2}\n"
                         "inference: {tp: 1, ep: 4, weight_dtype: fp8, max_num_seqs: 4, "
                         "poisson: {rate: 20, requests: 8, prompt_len: 64, output_len: 8}}\n",
}
TRACE_SEED = "arrival_time,prompt_tokens,output_tokens\n0.0,32,8\n0.05,64,4\n0.1,16,16\n"
# A PyTorch profiler trace in little: a launch and its kernel, an H2D copy, an NCCL kernel
# on its own stream after a cudaStreamWaitEvent, a synchronise and allocator events.
KINETO_SEED = """{"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 2},
 "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
 "traceEvents": [
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 100.5,
   "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": 1048576, "Total Allocated": 3145728, "Total Reserved": 4194304}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 101.25, "dur": 4.5,
   "args": {"correlation": 7}},
  {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 108.0, "dur": 50.125,
   "args": {"device": 0, "stream": 7, "correlation": 7, "grid": [64, 1, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpyAsync", "pid": 1, "tid": 1, "ts": 110, "dur": 3,
   "args": {"correlation": 8}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 0, "tid": 7, "ts": 160, "dur": 10,
   "args": {"device": 0, "stream": 7, "correlation": 8, "bytes": 262144}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "pid": 1, "tid": 1, "ts": 115, "dur": 1,
   "args": {"correlation": 9}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 117, "dur": 5,
   "args": {"correlation": 10}},
  {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
   "pid": 0, "tid": 20, "ts": 171, "dur": 30,
   "args": {"device": 0, "stream": 20, "correlation": 10, "Collective name": "allreduce", "In msg nelems": 65536,
            "Out msg nelems": 65536, "Group size": 2, "dtype": "Float", "Process Group Ranks": "[0, 1]"}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": 125, "dur": 80,
   "args": {"correlation": 11}},
  {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": 206,
   "args": {"Device Type": 1, "Device Id": 0, "Addr": 4096, "Bytes": -1048576, "Total Allocated": 2097152, "Total Reserved": 4194304}}
 ]}
"""
EXPORT_SPEC = ("hardware: {node: desktop-4070}\nmodel: {layers: 2, hidden: 128, heads: 2, vocab: 1000}\n"
               "training: {seq_len: 64, global_batch: 2, micro_batch: 1}\n")
KINETO_SPEC = "hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: rank0.json}\n"
SWEEP_SEED = ("spec:\n  hardware: {node: desktop-4070}\n  model: {preset: gpt2}\n"
              "  training: {seq_len: 128, global_batch: 4, micro_batch: 1}\n"
              "grid:\n  training.micro_batch: [1, 2]\nfilter: \"micro_batch < 4\"\n"
              "metrics:\n  step_ms: step_time_s * 1000\n  per_gpu: tokens_per_s / gpus\n"
              "record: {memory: true, links: true}\n")

# `memwall optimize`'s own options, valid and not; a case takes a few, mostly valid ones.
# Its spec is train.yaml (one GPU of a desktop: a handful of layouts, each replayed in
# well under a second) or, with --dry-run only, train_tp.yaml (four A100s: some 260).
OPTIMIZE_FLAGS = [
    ["--gpus", "1"], ["--gpus", "2"], ["--gpus-range", "1:2"], ["--axis", "micro_batch=1,2"],
    ["--axis", "training.micro_batch=4"], ["--axis", "recompute=full,none"], ["--axis", "training.zero=0"],
    ["--axis", "sp=false"], ["--objective", "cost"], ["--objective", "energy"],
    ["--objective", "tokens_per_dollar"], ["--top", "1"], ["--top", "3"], ["--years", "1"],
    ["--tokens", "1e12"], ["--set", "training.global_batch=2"], ["--json"], ["--json"], ["-j", "2"],
]
OPTIMIZE_BAD_FLAGS = [
    ["--gpus", "0"], ["--gpus", "-3"], ["--gpus", "1e9"], ["--gpus", "x"], ["--gpus-range", "2:1"],
    ["--gpus-range", "0:4"], ["--gpus-range", ":"], ["--gpus-range", "1:99999999999"], ["--axis", "tp="],
    ["--axis", "tp=0"], ["--axis", "unknown_axis=1"], ["--axis", "recompute=full,never"], ["--axis", "zero=9"],
    ["--axis", "sp=maybe"], ["--axis", "=1"], ["--axis", "tp=1,1"], ["--objective", "speed"], ["--top", "0"],
    ["--top", "-1"], ["--top", "x"], ["--years", "0"], ["--years", "nan"], ["--years", "1e308"],
    ["--tokens", "-1"], ["--set", "training.seq_len=0"], ["-j", "0"], ["--resume"], ["--compare"],
    ["--plot", "out.png"],
]

EXTREMES = ["0", "-1", "1", "1e308", "1e12", "5e11", "-1e308", "1e-300", "4294967296", "9223372036854775807",
            "18446744073709551616", "nan", "inf", "-inf", "0.5", "1e9", "''", "~", "[]", "{}", "[1, 2]",
            "{a: 1}", "true", "\"x\\ny\"", "100000000", "3", "'80 GB'", "'1e308 PB/s'", "'5 us'", "gpt2",
            "dgx-a100", "&a 1", "*a", "!!binary aGk=", "'\\x00'", "'" + "9" * 400 + "'"]
KEYS = ["hardware", "model", "training", "inference", "node", "gpu", "preset", "nodes", "gpus_per_node",
        "network", "nics", "seq_len", "global_batch", "micro_batch", "tp", "pp", "dp", "zero", "layers",
        "hidden", "heads", "vocab", "memory_bytes", "hbm_achievable_bw", "peak_flops.bf16", "trace", "poisson", "requests",
        "max_num_seqs", "offload", "grid", "zip", "metrics", "filter", "record", "memory", "mode", "managed",
        "prefetch", "eviction", "accessed_by", "start", "chunk_bytes", "percent", "activations", "engine",
        "trace_speedup", "attention", "block_size", "tiers", "oversubscription", "rail_optimized",
        "fsdp", "compile", "float8", "async_tp", "torch", "virtual_stages", "engine_release",
        "max_model_len", "gpu_memory_utilization", "mem_fraction_static", "offload_hooks", "unknown_key"]


def mutate_text(rng, text):
    """One to four structural or byte-level edits of a YAML or CSV text."""
    lines = text.split("\n")
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(10)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines:                                   # a value becomes an extreme one
            line = lines[i]
            if ":" in line:
                head = line[: line.index(":") + 1]
                lines[i] = head + " " + rng.choice(EXTREMES)
            elif "," in line:
                cells = line.split(",")
                cells[rng.randrange(len(cells))] = rng.choice(EXTREMES)
                lines[i] = ",".join(cells)
        elif op == 1 and lines:                                 # drop a line
            del lines[i]
        elif op == 2 and lines:                                 # duplicate a line
            lines.insert(i, lines[i])
        elif op == 3:                                           # a new key somewhere
            indent = " " * rng.choice([0, 2, 4])
            lines.insert(i, indent + rng.choice(KEYS) + ": " + rng.choice(EXTREMES))
        elif op == 4 and lines:                                 # re-indent a line
            lines[i] = " " * rng.choice([0, 1, 2, 3, 6]) + lines[i].lstrip()
        elif op == 5:                                           # truncate
            joined = "\n".join(lines)
            lines = joined[: rng.randrange(len(joined) + 1)].split("\n")
        elif op == 6 and lines:                                 # flip characters
            chars = list(lines[i])
            for _ in range(rng.randint(1, 3)):
                if chars:
                    chars[rng.randrange(len(chars))] = rng.choice("{}[]:,'\"-&*!|>#%@`\t\\0123456789ax\x00\x7f")
            lines[i] = "".join(chars)
        elif op == 7:                                           # deep nesting
            depth = rng.choice([50, 600, 20000])
            lines.insert(i, "deep: " + "[" * depth + "]" * depth)
        elif op == 8 and len(lines) > 1:                        # swap two lines
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == 9:                                           # aliases: a loop, a bomb
            lines.insert(i, hostile.alias_insert(rng))
    return "\n".join(lines)


def mutate_binary(rng, data):
    data = bytearray(data)
    op = rng.randrange(3)
    if op == 0:                                                 # flip bytes
        for _ in range(rng.randint(1, 40)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif op == 1:                                               # truncate
        data = data[: rng.randrange(len(data))]
    else:                                                       # zero a block
        start = rng.randrange(len(data))
        data[start: start + rng.randint(1, 4096)] = bytes(min(len(data) - start, 4096))
    return bytes(data)


class Case:
    def __init__(self, name, files, args, outputs, created_outputs_ok=False, links=None, rival=None,
                 kept_inputs=None):
        self.name, self.files, self.args, self.outputs = name, files, args, outputs
        self.created_outputs_ok = created_outputs_ok   # a sweep's file exists from its start
        self.links = links or {}                       # name -> target, made before the run
        self.rival = rival                             # args of a second process started alongside
        # Files that must keep their bytes: every input but one the command rewrites.
        self.kept_inputs = kept_inputs if kept_inputs is not None else [f for f in files if f not in outputs]
        # A damaged or forged results file or profiler trace is bad input: exit 2, never a
        # runtime failure (a memcpy of -1 bytes ended in exit 3).
        self.bad_input_only = name.split("-", 1)[1].startswith("h5") or name.endswith("hdf5") or \
            name.endswith("kineto")


def make_hostile_case(rng, n, h5_seeds):
    """issue 37's generators: see hostile.py."""
    kind = rng.choice(["h5struct", "h5struct", "h5stamped", "h5plain", "hf", "profile", "jsonl", "link", "shared"])
    name = "%05d-%s" % (n, kind)
    run_args = ["run", "spec.yaml", "-o", "out.h5", "--trace", "out.json", "--json"]
    if kind.startswith("h5"):
        seed = rng.choice(sorted(s for s in h5_seeds if s.endswith(".h5")))
        image = h5_seeds[seed]
        if kind == "h5plain":
            data = hostile.plain_hdf5(image)
        elif kind == "h5struct" and hostile.h5py is not None:
            data = hostile.structural_mutation(rng, image, tempfile.gettempdir())
        else:
            data = hostile.stamped_byte_mutation(rng, image, mutate_binary)
        files = {"in.h5": data}
        choice = rng.randrange(4)
        if choice == 1 and seed == "sweep.h5":
            files["sweep.yaml"] = SWEEP_SEED
            return Case(name, files, ["sweep", "sweep.yaml", "-o", "in.h5", "--resume", "-j", "1"], [],
                        kept_inputs=["sweep.yaml"])
        if choice == 2:
            return Case(name, files, ["plot", "in.h5", "-o", "out.png"] +
                        (["--kind", "memory", "--point", "0"] if seed == "sweep.h5" and rng.random() < 0.5 else []),
                        ["out.png"])
        return Case(name, files, ["report", "in.h5"] + (["--csv"] if choice == 3 else []), [])
    if kind == "hf":
        return Case(name, {"spec.yaml": hostile.HF_SPEC,
                           "config.json": hostile.mutate_json_text(rng, hostile.hf_config_seed(rng))},
                    run_args, ["out.h5", "out.json"])
    if kind == "profile":
        return Case(name, {"spec.yaml": hostile.PROFILE_SPEC,
                           "profile.yaml": mutate_text(rng, hostile.profile_seed())}, run_args, ["out.h5", "out.json"])
    if kind == "jsonl":
        return Case(name, {"spec.yaml": hostile.JSONL_SPEC, "trace.jsonl": hostile.mutate_jsonl(rng, hostile.JSONL_SEED)},
                    run_args, ["out.h5", "out.json"])
    if kind == "link":
        # An output that is a link (to the spec), or names the spec, or a planted link at
        # a temporary name beside it: the spec must keep its bytes.
        files = {"spec.yaml": SPEC_SEEDS["train.yaml"]}
        choice = rng.randrange(4)
        if choice == 0:
            return Case(name, files, ["run", "spec.yaml", "-o", "out.h5"], [], links={"out.h5": "spec.yaml"})
        if choice == 1:
            return Case(name, files, ["run", "spec.yaml", "--trace", "./spec.yaml"], [])
        if choice == 2:
            return Case(name, files, ["run", "spec.yaml", "-o", "out.h5", "--trace", "./out.h5"], ["out.h5"])
        files["sweep.h5"] = h5_seeds["sweep.h5"]
        return Case(name, files, ["plot", "sweep.h5", "-o", "out.png"], ["out.png"],
                    links={".out.png.tmp.png": "spec.yaml"})
    # Two processes, one output: a sweep and a run -o of the same file.
    files = {"sweep.yaml": SWEEP_SEED, "spec.yaml": SPEC_SEEDS["train.yaml"]}
    # (Whichever takes the lock first writes; the other is refused with exit 2.)
    return Case(name, files, ["sweep", "sweep.yaml", "-o", "results.h5", "-j", "1"], [],
                rival=["run", "spec.yaml", "-o", "results.h5"])


def make_case(rng, n, h5_seeds, params):
    if rng.random() < 0.4:
        return make_hostile_case(rng, n, h5_seeds)
    kind = rng.choice(["spec", "spec", "spec", "set", "sweep", "trace", "kineto", "hdf5", "optimize"])
    name = "%05d-%s" % (n, kind)
    if kind == "optimize":
        dry = rng.random() < 0.3
        seed = SPEC_SEEDS["train_tp.yaml" if dry and rng.random() < 0.5 else "train.yaml"]
        files = {"spec.yaml": mutate_text(rng, seed) if rng.random() < 0.5 else seed}
        args = ["optimize", "spec.yaml", "-o", "results.h5", "-j", "1"] + (["--dry-run"] if dry else [])
        for _ in range(rng.randint(1, 3)):
            args += rng.choice(OPTIMIZE_BAD_FLAGS if rng.random() < 0.2 else OPTIMIZE_FLAGS)
        return Case(name, files, args, ["results.h5"], created_outputs_ok=True)
    if kind == "kineto":
        seed = KINETO_SEED if rng.random() < 0.6 else h5_seeds["step.json"].decode()
        trace = mutate_text(rng, seed) if rng.random() < 0.8 else seed
        files = {"spec.yaml": KINETO_SPEC if rng.random() < 0.8 else mutate_text(rng, KINETO_SPEC),
                 "rank0.json": trace}
        if rng.random() < 0.3:  # gzip, whole or cut short
            data = gzip.compress(trace.encode())
            files["rank0.json"] = data if rng.random() < 0.5 else data[:rng.randrange(1, len(data))]
        args = ["run", "spec.yaml", "-o", "out.h5", "--trace", "out.json"] + (["--json"] if rng.random() < 0.3 else [])
        return Case(name, files, args, ["out.h5", "out.json"])
    if kind in ("spec", "set", "trace"):
        seed = rng.choice(sorted(SPEC_SEEDS)) if kind != "trace" else "serve_trace.yaml"
        spec = SPEC_SEEDS[seed]
        files = {"trace.csv": TRACE_SEED}
        if kind == "spec":
            spec = mutate_text(rng, spec)
        if kind == "trace":
            files["trace.csv"] = mutate_text(rng, TRACE_SEED)
        files["spec.yaml"] = spec
        args = ["run", "spec.yaml", "-o", "out.h5", "--trace", "out.json"]
        if kind == "set" or rng.random() < 0.2:
            for _ in range(rng.randint(1, 3)):
                key = rng.choice(params) if params and rng.random() < 0.8 else rng.choice(KEYS)
                args += ["--set", key + "=" + rng.choice(EXTREMES)]
        if rng.random() < 0.3:
            args.append("--json")
        return Case(name, files, args, ["out.h5", "out.json"])
    if kind == "sweep":
        files = {"sweep.yaml": mutate_text(rng, SWEEP_SEED)}
        args = ["sweep", "sweep.yaml", "-o", "results.h5", "-j", "1"]
        if rng.random() < 0.5:
            args.append("--dry-run")
        return Case(name, files, args, ["results.h5"], created_outputs_ok=True)
    seed = rng.choice(sorted(n for n in h5_seeds if n.endswith(".h5")))
    files = {"in.h5": mutate_binary(rng, h5_seeds[seed])}
    choice = rng.randrange(3)
    if choice == 0:
        args = ["report", "in.h5"] + (["--by", "step_ms"] if seed == "sweep.h5" else [])
    elif choice == 1 and seed == "sweep.h5":
        files["sweep.yaml"] = SWEEP_SEED
        args = ["sweep", "sweep.yaml", "-o", "in.h5", "--resume", "-j", "1"]
    else:
        args = ["report", "in.h5", "--top", str(rng.choice([0, 1, 5, 1000000]))]
    return Case(name, files, args, [])


def run_case(binary, case, timeout, keep, slow=0):
    work = tempfile.mkdtemp(prefix="memwall-fuzz-")
    try:
        for fname, content in case.files.items():
            mode = "wb" if isinstance(content, bytes) else "w"
            with open(os.path.join(work, fname), mode) as f:
                f.write(content)
        for link, target in case.links.items():
            os.symlink(target, os.path.join(work, link))
        before = hostile.input_digests(work, case.kept_inputs)
        env = dict(os.environ, LC_ALL="C")
        rival = None
        if case.rival:  # started alongside, a moment after the case's own command
            def start_rival():
                time.sleep(0.05)
                return subprocess.run([binary] + case.rival, cwd=work, capture_output=True, timeout=timeout, env=env)
            result = {}
            rival = threading.Thread(target=lambda: result.setdefault("p", start_rival()))
            rival.start()
        out = b""
        started = time.monotonic()
        try:
            p = subprocess.run([binary] + case.args, cwd=work, capture_output=True, timeout=timeout, env=env)
            code, err, out = p.returncode, p.stderr.decode("utf-8", "replace"), p.stdout
        except subprocess.TimeoutExpired:
            code, err = None, ""
        seconds = time.monotonic() - started
        if rival:
            rival.join()
        problem = None
        if code is None:
            problem = "hang: no exit within %d s" % timeout
        elif slow and seconds > slow:
            problem = "slow: %.1f s (limit %g s)" % (seconds, slow)
        elif code < 0:
            problem = "killed by signal %d" % -code
        elif code not in (0, 2, 3):
            problem = "exit code %d" % code
        elif code == 3 and case.bad_input_only:
            problem = "exit 3 (a runtime failure) on a damaged results file, which is bad input (2)"
        elif code != 0 and err.count("\n") != 1:
            problem = "%d lines on stderr" % err.count("\n")
        elif code != 0 and not (code == 3 and case.created_outputs_ok):
            left = [o for o in case.outputs if os.path.exists(os.path.join(work, o))]
            if left:
                problem = "output left behind after exit %d: %s" % (code, ", ".join(left))
        if problem is None:
            temps = [f for f in os.listdir(work) if ".tmp" in f and f not in case.links]
            if temps:
                problem = "temporary files left behind: " + ", ".join(temps)
        if problem is None and code is not None:
            problem = hostile.check_invariants(code, out.decode("utf-8", "replace"), case.args, before, work,
                                               case.kept_inputs)
        if rival:
            r = result.get("p")
            if problem is None and (r is None or r.returncode not in (0, 2) or
                                    (r.returncode and r.stderr.count(b"\n") != 1)):
                problem = "the rival process ended with %s" % (r.returncode if r else "no result")
            # Whichever wrote last, what is there is a whole file memwall reads.
            if problem is None and os.path.exists(os.path.join(work, "results.h5")) and subprocess.run(
                    [binary, "report", "results.h5"], cwd=work, capture_output=True, timeout=timeout,
                    env=env).returncode != 0:
                problem = "the shared output is not a readable results file after both finished"
        if problem and keep:
            dest = os.path.join(keep, case.name)
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(work, dest)
            with open(os.path.join(dest, "COMMAND"), "w") as f:
                f.write("cd %s && %s %s\n# %s\n%s" % (dest, binary, " ".join(case.args), problem, err))
        return code, problem, err, seconds
    finally:
        shutil.rmtree(work, ignore_errors=True)


def seed_hdf5(binary):
    """A run file and a sweep file (with timelines and links) to damage."""
    work = tempfile.mkdtemp(prefix="memwall-fuzz-seed-")
    try:
        with open(os.path.join(work, "spec.yaml"), "w") as f:
            f.write(SPEC_SEEDS["train.yaml"])
        with open(os.path.join(work, "sweep.yaml"), "w") as f:
            f.write(SWEEP_SEED)
        subprocess.run([binary, "run", "spec.yaml", "-o", "run.h5"], cwd=work, check=True, capture_output=True)
        subprocess.run([binary, "sweep", "sweep.yaml", "-o", "sweep.h5", "-j", "1"], cwd=work, check=True,
                       capture_output=True)
        # A step memwall exported (the trace format with args.memwall), to damage too.
        with open(os.path.join(work, "tiny.yaml"), "w") as f:
            f.write(EXPORT_SPEC)
        subprocess.run([binary, "export", "tiny.yaml", "-o", "step.json"], cwd=work, check=True, capture_output=True)
        os.replace(os.path.join(work, "step.rank0.json"), os.path.join(work, "step.json"))  # one GPU's file
        return {n: open(os.path.join(work, n), "rb").read() for n in ("run.h5", "sweep.h5", "step.json")}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "memwall"))
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=60, help="seconds per case before it counts as a hang")
    ap.add_argument("--slow", type=float, default=0,
                    help="seconds past which a case is a finding (issue 37: no input of <= 1 MB takes more than "
                         "10 s to be refused); 0: none")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", default="fuzz-findings", help="folder for the files of failing cases")
    a = ap.parse_args()
    binary = os.path.abspath(a.binary)
    rng = random.Random(a.seed)
    listed = subprocess.run([binary, "list", "params"], capture_output=True, text=True).stdout.split("\n")
    params = sorted({l.split()[0] for l in listed if l.strip() and "." in l.split()[0]})
    h5 = seed_hdf5(binary)
    cases = [make_case(rng, n, h5, params) for n in range(a.cases)]
    counts, findings = {}, []
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        futures = {pool.submit(run_case, binary, c, a.timeout, a.keep, a.slow): c for c in cases}
        slowest = (0.0, "")
        for fut in concurrent.futures.as_completed(futures):
            code, problem, err, seconds = fut.result()
            slowest = max(slowest, (seconds, futures[fut].name))
            kind = futures[fut].name.split("-", 1)[1]
            key = (kind, "finding" if problem else "exit %s" % code)
            counts[key] = counts.get(key, 0) + 1
            if problem:
                findings.append((futures[fut].name, problem, err.strip().split("\n")[:3]))
    for kind in sorted({k for k, _ in counts}):
        outcomes = ", ".join("%s: %d" % (o, n) for (k, o), n in sorted(counts.items()) if k == kind)
        print("%-6s %s" % (kind, outcomes))
    print("slowest case: %s, %.2f s" % (slowest[1], slowest[0]))
    for name, problem, err in sorted(findings):
        print("FINDING %s: %s | %s" % (name, problem, " / ".join(err)))
    print("%d cases, seed %d, %d findings%s" % (a.cases, a.seed, len(findings),
                                                 " (files in %s)" % a.keep if findings else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
