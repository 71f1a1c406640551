#!/usr/bin/python3
"""A GEMM table with its large rows at full clock: what fit_shipped_profiles.sh fits.

The H200's gemm.csv was swept back to back, so its rows of 8,192 tokens and more ran
throttled under the 700 W limit; power-gemm-table-cool.csv timed them again after idle, paying
a fixed wake-up of ~78 us (the median excess over the table of its 1,024-2,048-token rows,
which the sweep did not throttle; 10th-90th percentile 39-115 us). Rows of >= 8,192 tokens
(the token count is m, or k for wgrad) that took 1 ms or more in the table take the cool time
less the wake-up, never more than the table's: cool less wake-up over table was 0.79-0.94 for
each of those 112 rows (median 0.87), and 0.68-1.31 for the 104 shorter ones (median 1.00:
not throttled, the wake-up's spread for noise; taken as is, 54 rows came out slower "at full
clock" and one above the bf16 peak). Every other row stays as measured.

The H100's table was swept the same way on the same GH100 compute die (132 SMs, 1,980 MHz,
700 W) and reads as throttled alike: where the H200's rows of 8,192 tokens and more took 1 ms
or more, the H100's take 0.978 of their times (median of 112; 10th-90th percentile
0.932-1.018: throttled a little less, its HBM3 drawing less than HBM3e), where their
compute-bound rows of 1,024-8,191 tokens, which no sweep throttled, agree (0.999 of 432;
0.954-1.027). Until an H100 is timed after idle (calibration/probes/gemm_table_cool.py),
`--sibling` takes those rows to the H200's full-clock time for the same row (the same die at
the same clock), never more than the H100's own. The power limit is then the replay's
(sim/timing/PowerGovernor).

  /usr/bin/python3 calibration/probes/full_clock_table.py TABLE COOL OUT
  /usr/bin/python3 calibration/probes/full_clock_table.py --sibling TABLE SIBLING_TABLE SIBLING_FULL OUT
"""
import csv
import sys

WAKE_UP_S = 78e-6
MIN_TOKENS = 8192
MIN_TABLE_S = 1e-3  # shorter rows ran unthrottled: see above


def key(r):
    return (r["layer"], r["pass"], r["m"], r["n"], r["k"])


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def tokens(r):
    return int(r["k"] if r["pass"] == "wgrad" else r["m"])


def main():
    args = sys.argv[1:]
    sibling = args[:1] == ["--sibling"]
    if len(args) != (5 if sibling else 3):
        sys.exit(__doc__.split("\n\n")[-1])
    rows = read(args[1] if sibling else args[0])
    if sibling:
        table = {key(r): float(r["time_s"]) for r in read(args[2])}
        full = {key(r): (float(r["time_s"]), r["gpu"]) for r in read(args[3])}
    else:
        cool = {key(r): r for r in read(args[1])}
    replaced = 0
    for r in rows:
        if tokens(r) < MIN_TOKENS:
            continue
        if sibling:
            k = key(r)
            if k not in table or k not in full or table[k] < MIN_TABLE_S:
                continue
            r["time_s"] = "%.6e" % min(float(r["time_s"]), full[k][0])
            r["source"] += ", at full clock: the %s's full-clock time for this row" % full[k][1]
        else:
            c = cool.get(key(r))
            if not c or float(r["time_s"]) < MIN_TABLE_S:
                continue
            r["time_s"] = "%.6e" % min(float(r["time_s"]), float(c["time_s"]) - WAKE_UP_S)
            r["source"] = c["source"] + ", less a 78 us wake-up"
        replaced += 1
    with open(args[-1], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print("full_clock_table: %d of %d rows at full clock" % (replaced, len(rows)))


if __name__ == "__main__":
    main()
