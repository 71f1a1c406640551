#pragma once
// A sweep spec (YAML): an experiment spec to start from and the axes to vary.
//
//   base: gpt2-1gpu-a100.yaml      # experiment spec, relative to this file (or `spec:` inline)
//   grid:                          # cartesian product, first axis slowest
//     training.micro_batch: [1, 2, 4]
//     training.zero: [0, 1, 2, 3]
//   zip:                           # axes that vary together (equal lengths); a list of
//     hardware.node: [dgx-a100, dgx-h100]   #   such mappings for several groups
//     training.precision: [bf16, fp8]
//   filter: "training.zero > 0 or micro_batch <= 2"   # keep a combination if true
//   metrics:                       # derived columns over axes and results
//     days: "300e9 / tokens_per_s / 86400"
//   record: {memory: false, links: false}   # per-point timelines in the results file
//
// Axis keys are spec keys (`memwall list params`) checked before anything runs; a value
// that makes a point invalid (tp not dividing the heads) is that point's error.
#include "app/sweep/Expression.hpp"
#include "sim/spec/ExperimentSpec.hpp"

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace memwall {

struct SweepSetting {
  std::string key;
  YAML::Node value;
  std::string text; // the value as flow YAML: "4", "dgx-a100", "{preset: dgx-a100, gpus: 2}"
};

struct SweepPoint {
  int64_t index = 0; // position among the points kept by the filter
  std::vector<SweepSetting> settings;
};

struct SweepSpec {
  std::string file, text;                     // the sweep spec and its text
  std::string base_file, base_text, base_dir; // the experiment spec the points start from
  std::vector<std::string> axes;              // every axis key, in table order
  std::vector<SweepPoint> points;
  std::vector<std::pair<std::string, Expression>> metrics;
  bool record_memory = false, record_links = false;
};

SweepSpec load_sweep(const std::string& path);
SweepSpec parse_sweep(const std::string& yaml_text, const std::string& file, const std::string& dir);
// The point's experiment: the base spec with the point's settings applied.
ExperimentSpec point_spec(const SweepSpec& sweep, const SweepPoint& point);
// A setting's value as an expression value: a number if it reads as one, else its text.
ExprValue setting_value(const SweepSetting& s);
// A name in a filter or metric expression: the point's axis with that full key, or the
// one axis whose key ends in ".name" (micro_batch for training.micro_batch); nothing
// when no axis or more than one matches.
std::optional<ExprValue> setting_lookup(const SweepPoint& p, const std::string& name);
// Whether `name` is the last dotted part(s) of `key`: "micro_batch" of
// "training.micro_batch" (how a short name reaches an axis).
bool is_key_tail(const std::string& key, const std::string& name);

} // namespace memwall
