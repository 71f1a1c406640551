#!/usr/bin/env bash
# Rewrites tests/golden/: every example's `memwall run --json`, the figures the golden
# test (tests/golden_test.cpp) holds the program to. Run it when a change is meant to
# move an example's figures, and let the diff show which moved in review.
#   scripts/update_goldens.sh [BUILD]      (default build/)
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}/memwall
rm -f tests/golden/*.json
for spec in examples/*.yaml; do
  name=$(basename "$spec" .yaml)
  "$B" run "$spec" --json > "tests/golden/$name.json"
done
echo "tests/golden: $(ls tests/golden/*.json | wc -l) examples"
