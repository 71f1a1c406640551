#!/usr/bin/env bash
# What a lent Hopper GPU measures in one short visit (run from the repository root, results
# under $1; GPU=catalog-id names the part, recognised from its name otherwise): the
# sustained-GEMM pair and random-operand FP8 GEMMs (memwall-gpubench --only), a training
# step's kernels cold and after a minute of load (sustained_step.py), GEMMs at a share of
# the time (gemm_duty_cycle.py), one step of each transformers family (family_steps.py),
# with nvidia-smi's clocks, power and throttle reasons sampled every 100 ms throughout.
# (On 2026-11-28 the duty-cycle probe ran in a second call, with the same sampling.) Needs nvcc, cuBLAS, torch and transformers;
# builds gpubench there (no SimGrid or Debian packages needed).
set -u
out=${1:?usage: lent_gpu_session.sh OUTDIR}
mkdir -p "$out"
log=$out/log.txt
exec > >(tee -a "$log") 2>&1
export PYTHONUNBUFFERED=1
py=$(command -v python3)
date -u
nvidia-smi -q
q=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,utilization.gpu
nvidia-smi --query-gpu=$q,clocks_event_reasons.active --format=csv -c 1 >/dev/null 2>&1 && q=$q,clocks_event_reasons.active
nvidia-smi --query-gpu=$q --format=csv -lms 100 >"$out/smi_log.csv" 2>&1 &
smi=$!
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
b=/tmp/gpubench-build
mkdir -p $b
for f in gpubench GemmBench MemoryBench; do
  $nvcc -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I. -c calibration/kernels/$f.cu -o $b/$f.o &
done
g++ -O2 -std=c++17 -I. -c hwmodels/GpuNames.cpp -o $b/GpuNames.o &
wait $(jobs -p | grep -v "^$smi\$")
$nvcc -o $b/memwall-gpubench $b/*.o -lcublas -lcublasLt && echo "gpubench built"
echo "== gpubench $(date -u +%T)"
$b/memwall-gpubench ${GPU:+--gpu $GPU} --only gemm_fp8,gemm_sustained -o "$out/gpubench.csv"
echo "== sustained_step $(date -u +%T)"
sleep 5
$py calibration/probes/sustained_step.py -o "$out/sustained_step.json" --trace "$out/trace_llama8b_4l_warm.json.gz"
echo "== gemm_duty_cycle $(date -u +%T)"
$py calibration/probes/gemm_duty_cycle.py -o "$out/gemm_duty.csv"
echo "== family_steps $(date -u +%T)"
$py calibration/probes/family_steps.py -o "$out/families.csv" --kernels "$out/family_kernels.csv" \
  --trace gpt2="$out/trace_gpt2_step.json.gz" --budget-s "${FAMILY_BUDGET_S:-150}"
echo "== done $(date -u +%T)"
kill $smi
