#!/usr/bin/env bash
# Reproduces the shipped profiles fitted on measurements of their own GPU
# (hwmodels/catalog/profiles/): memwall calibrate import, then fit, over calibration/data.
#   calibration/fit_shipped_profiles.sh [BUILD]     (default build/)
# What each profile is fitted on, and what is left out and why, is in calibration/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}/memwall
D=calibration/data
P=hwmodels/catalog/profiles
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# H100 and H200: their own measurements (calibration/data/measured), taken alike on both,
# so that the two profiles compare. GEMMs: the torch bf16 table (random operands, each
# pass apart) without Llama-2-7B's and GPT-2 XL's layers, held out to check the fit
# (tests/calibration_measured_test.cpp); fp32, tf32 and fp8 from gpubench (zero-filled
# operands: optimistic where compute-bound); gpubench's zero-filled fp16 rows left out
# (fp16 takes bf16's measurements: the same tensor cores), and its bidir_pinned rows (the
# two copies ran one after the other). Memory-bound kernels: torch's eager ops by family
# and gpubench's copy kernel; the H100's fused AdamW from the launches of the recorded HF
# training step (fused-adamw.csv: calibration/fused_adamw_from_trace.py over
# tests/data/traces/h100-llama1b-hf-train.json.gz). The H100's NCCL curves: Vidur's DGX
# H100 network profile.
held_out="--exclude layer:llama2-7b. --exclude layer:gpt2-xl."
# Each kernel was timed alone between two CUDA events: the smallest copy kernel measures
# 3.81 us on the H100 (gpubench), where back-to-back small kernels of the recorded HF step
# start 2.78 us apart (median of 150 pairs under 2 us each; tests/data/traces/
# h100-llama1b-hf-train.json.gz): 1.02 us of every measurement is the events' and the
# launch's, not the stream's. The H200 (no trace of its own; same launch path, its copy
# floor 3.62 us) takes the H100's figure.
# Between back-to-back kernels of that step the stream idles 1.57 us (median gap from a
# kernel's end to the next one's start): part of a kernel's hold on a busy stream, not
# of a kernel that a slower host launches (an eager decode).
kernel_timing="--event-overhead 1.02e-6 --launch-gap 1.57e-6"
# gpubench's fp8 GEMMs ran on zero-filled operands, which a power-limited Hopper runs
# faster than real data: a bf16 8192^3 GEMM took 882 against 792 TFLOP/s on the H100 and
# 883 against 788 on the H200, zeros against random, the same day (data/measured/README.md).
# That ratio divides the fp8 fit's big-tile efficiency (FP8 switches the same tensor cores;
# the H100's corrected ceiling, ~1,520 TFLOP/s, sits 8 % above the 1,402.6 TFLOP/s
# random-data maximum Stas Bekman's MAMF finder publishes for its best shape). tf32 and
# fp32 rows, also zero-filled, are left as measured.
# The H200's fp8 rows are its own on random e4m3 operands since 2026-11-28
# (data/measured/h200/power-gpubench.csv: big shapes take 1.197x as long as the zero-filled
# rows, all 490 shapes 1.070x, against bf16's flat 1.12): the zero-filled ones are left out.
h100_zeros="--zero-filled fp8=1.1136"
for g in h100:h100-sxm-80gb h200:h200-sxm-141gb; do
  $B calibrate import torch-kernels $D/measured/${g%%:*}/kernels.csv --gpu ${g#*:} -o $T/${g%%:*}-kernels.csv >/dev/null
done
$B calibrate import vidur-network $D/vidur/network/h100_dgx/all_reduce.csv $D/vidur/network/h100_dgx/send_recv.csv \
  --gpu h100-sxm-80gb -o $T/h100-net.csv >/dev/null

# The H100's bf16 table with its long rows of 8,192 tokens and more at full clock: swept back
# to back like the H200's and throttled alike, they take the H200's full-clock times
# (gemm-full-clock.csv, made by calibration/probes/full_clock_table.py --sibling, whose
# comment gives the evidence) until an H100 is timed after idle.
$B calibrate fit $D/measured/h100/gemm-full-clock.csv $D/measured/h100/gpubench.csv $T/h100-kernels.csv $T/h100-net.csv \
  $D/measured/h100/fused-adamw.csv \
  --exclude gemm:fp16 --exclude bidir_pinned $held_out $kernel_timing $h100_zeros -o $P/h100-sxm-80gb.yaml
grep -v ',gemm,fp8,' $D/measured/h200/gpubench.csv >$T/h200-gpubench-without-fp8.csv
# The H200's bf16 table with its rows of 8,192 tokens and more at full clock (timed again
# after idle, power-gemm-table-cool.csv; gemm-full-clock.csv is made by
# calibration/probes/full_clock_table.py): the sweep ran them throttled, and the replay
# applies the 700 W limit itself (tensor_core_w in the catalog; sim/timing/PowerGovernor).
# Its fused AdamW: the launches of the 18 measured HF steps (fused-adamw.csv: calibration/
# fused_adamw_from_family_kernels.py over hf-families.csv and hf-family-kernels.csv).
$B calibrate fit $D/measured/h200/gemm-full-clock.csv $T/h200-gpubench-without-fp8.csv $D/measured/h200/power-gpubench.csv \
  $T/h200-kernels.csv $D/measured/h200/fused-adamw.csv --exclude gemm:fp16 --exclude bidir_pinned $held_out $kernel_timing -o $P/h200-sxm-141gb.yaml
