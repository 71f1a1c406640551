#pragma once
// The groups of benchmarks memwall-gpubench runs, by the names `--only` takes (plain C++:
// `memwall calibrate measure` checks a list before it starts the GPU program, which
// checks it again). A full grid takes many minutes; a GPU lent for a quarter of an hour
// measures the groups it is needed for.
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace gpubench {

inline const std::vector<std::string>& bench_groups()
{
  static const std::vector<std::string> names{"gemm",        "gemm_fp8", "gemm_sustained", "elementwise",
                                              "host_copies", "peer",     "managed",        "nccl"};
  return names;
}

// The groups a comma-separated list names, or nullopt with why in `error` (a name that is
// not a group, or an empty one: "", ",gemm", "gemm,", "gemm,,nccl"). A group named twice
// is measured once.
inline std::optional<std::set<std::string>> parse_bench_groups(const std::string& list, std::string& error)
{
  std::set<std::string> out;
  std::stringstream in(list + ","); // the final empty name after a trailing comma is read too
  std::string name;
  while (std::getline(in, name, ',')) {
    if (name.empty()) {
      error = "an empty group name in '" + list + "'";
      return std::nullopt;
    }
    bool known = false;
    for (const std::string& g : bench_groups())
      known = known || g == name;
    if (!known) {
      error = "'" + name + "' is not a group";
      return std::nullopt;
    }
    out.insert(name);
  }
  return out;
}

inline std::string bench_groups_joined()
{
  std::string s;
  for (const std::string& g : bench_groups())
    s += (s.empty() ? "" : ", ") + g;
  return s;
}

} // namespace gpubench
