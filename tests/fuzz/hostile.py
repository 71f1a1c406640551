"""The fuzzer's hostile generators (issue 37): inputs built to get past the first checks.

- results files that are structurally valid but inconsistent, with their checksum
  stamped again (h5py, where the interpreter has it), or byte-mutated and stamped again,
  or plain HDF5 without memwall's checksum;
- HF configs, hardware profiles and JSONL request traces, mutated;
- YAML aliases (loops, bombs) in specs;
- outputs that are symbolic links, or name an input;
- two processes writing one output.
And the invariants every case is held to beyond its exit code (check_invariants): no
input changes, and a run that exits 0 reports numbers inside physical bounds.
"""
import hashlib
import json
import math
import os

try:
    import h5py  # Debian's python3-h5py (scripts/install_deps.sh); optional
    import numpy
except ImportError:  # then structural cases fall back to stamped byte mutations
    h5py = None

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

JSON_EXTREMES = [0, -1, 1, 2 ** 62, -2 ** 63, 2 ** 64, 1e308, -1e308, 1e-300, 0.5, 3.7, "", "x", "1e400", None,
                 True, False, [], {}, [1, 2], {"a": 1}]


# ------------------------------------------------------------------ results files
def fnv1a64(data):
    h = 1469598103934665603
    for b in data:
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def stamp(image):
    """The file with memwall's checksum header over bytes [512, end) (FileChecksum.hpp)."""
    body = image[512:]
    line = ("memwall-checksum fnv1a64 %016x %d\n" % (fnv1a64(body), len(body))).encode()
    return line + bytes(512 - len(line)) + body


def stamped_byte_mutation(rng, image, mutate_binary):
    """Damage behind a valid checksum: libhdf5 itself meets it (analysis/Hdf5Probe)."""
    body = mutate_binary(rng, image[512:]) if len(image) > 512 else image
    return stamp(bytes(512) + body)


def plain_hdf5(image):
    """The HDF5 file without memwall's user block: refused as not memwall's."""
    return image[512:]


def deep_json(rng):
    depth = rng.choice([300, 5000, 100000])
    return "[" * depth + "]" * depth


def _edit_summary(rng, text):
    j = json.loads(text)
    paths = []

    def walk(v, path):
        paths.append(path)
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, path + [k])
        elif isinstance(v, list):
            for i, x in enumerate(v):
                walk(x, path + [i])
    walk(j, [])
    path = rng.choice(paths[1:]) if len(paths) > 1 else []
    parent = j
    for p in path[:-1]:
        parent = parent[p]
    if path:
        if isinstance(parent, dict) and rng.random() < 0.4:
            del parent[path[-1]]
        else:
            parent[path[-1]] = rng.choice(JSON_EXTREMES)
    return json.dumps(j)


def structural_mutation(rng, image, workdir):
    """1 to 3 edits through h5py of a file memwall wrote, then its checksum stamped again:
    columns of other lengths or types, forged shapes, hostile attributes, deleted parts."""
    path = os.path.join(workdir, "edit.h5")
    with open(path, "wb") as f:
        f.write(image)
    with h5py.File(path, "r+") as f:
        datasets, groups = [], []
        f.visititems(lambda n, o: (datasets if isinstance(o, h5py.Dataset) else groups).append(n))
        for _ in range(rng.randint(1, 3)):
            op = rng.randrange(8)
            if op == 0 and datasets:                    # a column of another length
                name = rng.choice(datasets)
                if name not in f:
                    continue
                old = f[name][()]
                n = rng.choice([0, 1, max(0, len(old) - 1), len(old) + 1, len(old) * 3])
                del f[name]
                if old.dtype.kind in "OSU":
                    f.create_dataset(name, data=numpy.array(["ok"] * n, dtype=h5py.string_dtype()))
                else:
                    f.create_dataset(name, data=numpy.resize(old, n) if len(old) else numpy.zeros(n))
            elif op == 1 and datasets:                  # a column of the other type
                name = rng.choice(datasets)
                if name not in f:
                    continue
                n = len(f[name])
                is_text = f[name].dtype.kind in "OSU"
                del f[name]
                if is_text:
                    f.create_dataset(name, data=numpy.full(n, rng.choice([0.0, -1.0, 1e308, float("nan")])))
                else:
                    f.create_dataset(name, data=numpy.array([rng.choice(["", "ok", "error", "x" * 300])] * n,
                                                            dtype=h5py.string_dtype()))
            elif op == 2 and datasets:                  # a forged shape over unwritten storage
                name = rng.choice(datasets)
                if name not in f:
                    continue
                del f[name]
                f.create_dataset(name, shape=(rng.choice([10 ** 6, 5 * 10 ** 7, 10 ** 9]),), dtype="f8")
            elif op == 3:                               # a hostile attribute
                picked = rng.choice(groups) if groups and rng.random() < 0.5 else None
                obj = f[picked] if picked is not None and picked in f else f  # (an earlier edit may have deleted it)
                keys = list(obj.attrs.keys()) or ["format"]
                key = rng.choice(keys)
                value = rng.choice([deep_json(rng), "[1, 2", "{}", "[]", '["a", "a"]', "null", "memwall-run",
                                    "memwall-sweep", float("nan"), 1e300, -1.0, 0,
                                    "5", '["nope"]', '{"a": 1}', '[1, "x"]'])  # JSON of another shape
                if key == "summary_json" and rng.random() < 0.6:
                    value = _edit_summary(rng, obj.attrs[key])
                obj.attrs[key] = value
            elif op == 4 and (datasets or groups):      # a part deleted
                name = rng.choice(datasets + groups)
                if name in f:
                    del f[name]
            elif op == 5 and datasets:                  # a two-dimensional column
                name = rng.choice(datasets)
                if name in f:
                    del f[name]
                    f.create_dataset(name, data=numpy.ones((2, 3)))
            elif op == 6 and groups:                    # a group that is its own member
                name = rng.choice(groups)
                if name in f and "loop" not in f[name]:  # (unless an earlier edit deleted it)
                    f[name]["loop"] = f[name]
            else:                                       # a column list naming what is not there
                if "points" in f:
                    f["points"].attrs["columns"] = json.dumps(["index", "status", "error", "missing"])
    with open(path, "rb") as f:
        data = f.read()
    os.remove(path)
    return stamp(data)


# ------------------------------------------------------------------ JSON inputs
def mutate_json_text(rng, text):
    """Edits of a JSON document: extreme values, deleted keys, deep nesting, a key given
    twice, truncation, a huge number."""
    try:
        j = json.loads(text)
    except ValueError:
        return text
    for _ in range(rng.randint(1, 3)):
        if isinstance(j, dict) and j:
            key = rng.choice(sorted(j))
            op = rng.randrange(4)
            if op == 0:
                j[key] = rng.choice(JSON_EXTREMES)
            elif op == 1:
                del j[key]
            elif op == 2:
                j["unused_" + str(rng.randrange(100))] = rng.choice(JSON_EXTREMES)
            else:
                j[key] = rng.choice([2 ** 62, 10 ** 8, 10 ** 7 + 1, 100001, 20000, -5])
    out = json.dumps(j)
    r = rng.random()
    if r < 0.15 and out.startswith("{") and len(out) > 2:    # a key given twice
        first = out[1:].split(",")[0]
        out = "{" + first + ", " + out[1:]
    elif r < 0.25:                                           # deep nesting, raw
        out = out[:-1] + ', "deep": ' + deep_json(rng) + "}"
    elif r < 0.3:
        out = out[: rng.randrange(len(out) + 1)]
    return out


def hf_config_seed(rng):
    folder = os.path.join(ROOT, "tests", "data", "hf_configs")
    names = sorted(n for n in os.listdir(folder) if os.path.isfile(os.path.join(folder, n, "config.json")))
    with open(os.path.join(folder, rng.choice(names), "config.json")) as f:
        return f.read()


HF_SPEC = ("hardware: {node: dgx-h100, gpus_per_node: 1}\nmodel: {hf_config: config.json, layers: 2}\n"
           "training: {seq_len: 128, global_batch: 2, micro_batch: 1}\n")
PROFILE_SPEC = ("hardware: {node: dgx-h100, gpus_per_node: 1, profile: profile.yaml}\nmodel: {preset: gpt2}\n"
                "training: {seq_len: 256, global_batch: 2, micro_batch: 1}\n")
JSONL_SPEC = ("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\n"
              "inference: {trace: trace.jsonl, max_num_seqs: 8}\n")
JSONL_SEED = ('{"arrival_time": 0.0, "prompt_tokens": 32, "output_tokens": 8}\n'
              '{"arrival_time": 0.05, "prompt_tokens": 64, "output_tokens": 4}\n'
              '{"timestamp": 0.1, "prompt_tokens": 16, "output_tokens": 16}\n')


def profile_seed():
    with open(os.path.join(ROOT, "hwmodels", "catalog", "profiles", "h100-sxm-80gb.yaml")) as f:
        return f.read()


def mutate_jsonl(rng, text):
    lines = text.strip("\n").split("\n")
    i = rng.randrange(len(lines))
    lines[i] = mutate_json_text(rng, lines[i])
    if rng.random() < 0.2:
        lines.append(json.dumps({"arrival_time": rng.choice([1e11, 1e9 + 1, -1e11, 5e9]), "prompt_tokens": 1,
                                 "output_tokens": 1}))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ YAML aliases
def alias_insert(rng):
    """A line that makes yaml-cpp's tree a graph: a loop, a merge into itself, a bomb."""
    kind = rng.randrange(4)
    if kind == 0:
        return "loop: &l [*l]"
    if kind == 1:
        return "merge: &m {<<: *m}"
    if kind == 2:
        levels = ["b0: &b0 [x, x, x, x, x, x, x, x, x, x]"]
        for k in range(1, rng.choice([3, 9])):
            levels.append("b%d: &b%d [%s]" % (k, k, ", ".join(["*b%d" % (k - 1)] * 10)))
        return "\n".join(levels)
    return "shared: &s {a: 1}\nagain: *s"


# ------------------------------------------------------------------ invariants
def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def input_digests(work, names):
    return {n: digest(os.path.join(work, n)) for n in names if os.path.isfile(os.path.join(work, n))}


def out_of_bounds(summary):
    """The first number of a run's --json outside physical bounds, or None: no negative
    bytes or seconds, MFU, utilizations and fractions within [0, 1]."""
    bad = []

    def walk(v, path):
        if bad:
            return
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, path + [k])
        elif isinstance(v, list):
            for x in v:
                walk(x, path)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            key = path[-1] if path else ""
            if not math.isfinite(v):
                bad.append(".".join(path) + " = %r" % v)
            elif (key.endswith("_bytes") or key.endswith("_s") or key == "seconds") and v < 0:
                bad.append(".".join(path) + " = %r < 0" % v)
            elif (key == "mfu" or "utilization" in key or "fraction" in key) and not (0 <= v <= 1 + 1e-9):
                bad.append(".".join(path) + " = %r outside [0, 1]" % v)
    walk(summary, [])
    return bad[0] if bad else None


def check_invariants(code, stdout, args, before, work, kept_inputs):
    """A problem beyond the exit code, or None."""
    for name, d in before.items():
        if name in kept_inputs and os.path.isfile(os.path.join(work, name)) and \
                digest(os.path.join(work, name)) != d:
            return "input %s changed" % name
        if name in kept_inputs and not os.path.isfile(os.path.join(work, name)):
            return "input %s replaced or removed" % name
    if code == 0 and "--json" in args and args[0] == "optimize":
        try:
            report = json.loads(stdout)
        except ValueError:
            return "optimize --json printed no JSON"
        if "--dry-run" in args:  # each spec's counts: they add up
            for plan in report if isinstance(report, list) else [None]:
                if not isinstance(plan, dict) or plan.get("enumerated", -1) < plan.get("invalid", 0) + \
                        plan.get("cannot_fit", 0):
                    return "optimize --dry-run --json: counts that do not add up: %r" % (plan,)
            return None
        for row in report.get("best", []):  # every ranked layout a replay that took time
            t = row.get("step_time_s")
            if not isinstance(t, (int, float)) or not (0 < t < 1e12):
                return "optimize ranked a layout with step_time_s %r" % (t,)
    if code == 0 and "--json" in args and args[0] == "run":
        try:
            summary = json.loads(stdout)
        except ValueError:
            return "run --json printed no JSON"
        where = out_of_bounds(summary)
        if where:
            return "out of physical bounds: " + where
        # A server whose KV cache cannot hold one block serves nothing: it does not fit.
        kv = summary.get("kv_cache") if isinstance(summary, dict) else None
        if isinstance(kv, dict) and summary.get("fits") is True and \
                (summary.get("kv_capacity_tokens") == 0 or kv.get("holds_one_request") is False):
            return "fits with a KV cache that holds no block (capacity %r tokens)" % summary.get("kv_capacity_tokens")
    return None
