#!/usr/bin/env bash
# Installs memwall's build and test dependencies from Debian packages, idempotently.
# Safe to run repeatedly: it asks apt only for what is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libsimgrid-dev
  libboost-program-options-dev
  libhdf5-dev
  catch2
  libyaml-cpp-dev
  nlohmann-json3-dev
  zlib1g-dev                        # gzip-compressed PyTorch profiler traces (workload.trace)
  python3-h5py python3-matplotlib   # memwall plot (analysis/plot_results.py) and tests reading results
  python3-pandas                    # the README's snippets that read results files
  libopenmpi-dev openmpi-bin        # mpirun -n N memwall sweep (optional at build time: MEMWALL_MPI)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "memwall: installing missing packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
