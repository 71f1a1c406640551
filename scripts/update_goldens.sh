#!/usr/bin/env bash
# Rewrites tests/golden/: every example's `memwall run --json`, the figures the golden
# test (tests/golden_test.cpp) holds the program to. Run it when a change is meant to
# move an example's figures, and let the diff show which moved in review.
# It also writes the README's list of implementations.
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

# The README's list of implementations is `memwall list implementations`
# (tests/readme_lists_test.cpp).
/usr/bin/python3 - "$B" <<'PY'
import subprocess, sys
begin, end = "<!-- begin: memwall list implementations -->\n", "<!-- end: memwall list implementations -->"
listing = subprocess.run([sys.argv[1], "list", "implementations"], check=True, capture_output=True, text=True).stdout
text = open("README.md").read()
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
open("README.md", "w").write(head + begin + "```text\n" + listing + "```\n" + end + tail)
PY
echo "README.md: implementations listed"
