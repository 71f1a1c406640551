#include "hwmodels/GpuNames.hpp"

#include <cctype>
#include <initializer_list>
#include <sstream>
#include <vector>

namespace memwall {
namespace {

// A rule: every token must appear in the name, and the memory (when known) lie in
// [min_gib, max_gib) GiB; the first rule that matches gives the id ("" for a GPU the
// catalog lacks, so that a vaguer rule below cannot take it).
struct NameRule {
  std::initializer_list<const char*> tokens;
  double min_gib, max_gib;
  const char* id;
  bool needs_memory; // the name alone cannot tell (an A100 board name without its memory)
};

constexpr double any = 1e9;

const NameRule rules[] = {
    // Hopper and Blackwell
    {{"h100", "pcie"}, 0, any, "h100-pcie-80gb", false},
    {{"h100", "nvl"}, 0, any, "", false}, // the 94 GB NVL part: not in the catalog
    {{"gh200"}, 0, any, "", false},
    {{"h100"}, 0, any, "h100-sxm-80gb", false},
    {{"h800"}, 0, any, "h800-sxm-80gb", false},
    {{"h200", "nvl"}, 0, any, "h200-nvl", false},
    {{"h200"}, 0, any, "h200-sxm-141gb", false},
    {{"gb200"}, 0, any, "gb200", false},
    {{"b200"}, 0, any, "b200", false},
    {{"gb300"}, 0, any, "gb300", false},
    {{"b300"}, 0, any, "b300", false}, // "NVIDIA B300 SXM6 AC"
    {{"h20"}, 0, 120, "h20", false},   // the 96 GB part (a 141 GB H20 is not in the catalog)
    // Ampere
    {{"a100", "pcie", "80gb"}, 0, any, "a100-pcie-80gb", false},
    {{"a100", "pcie", "40gb"}, 0, any, "", false},
    {{"a100", "pcie"}, 60, any, "a100-pcie-80gb", true},
    {{"a100", "pcie"}, 0, 60, "", true},
    {{"a100", "80gb"}, 0, any, "a100-sxm4-80gb", false},
    {{"a100", "40gb"}, 0, any, "a100-sxm4-40gb", false},
    {{"a100"}, 60, any, "a100-sxm4-80gb", true}, // board names: A100-PG509-200 (40 GB), A100-SXM-80GB
    {{"a100"}, 0, 60, "a100-sxm4-40gb", true},
    {{"a40"}, 0, any, "a40", false},
    {{"a10g"}, 0, any, "a10g", false},       // AWS G5's GA102 board ("NVIDIA A10" stays unmapped)
    {{"a6000"}, 0, any, "rtx-a6000", false}, // "NVIDIA RTX A6000"
    {{"rtx", "3090", "ti"}, 0, any, "", false},
    {{"rtx", "3090"}, 0, any, "rtx-3090", false},
    // Ada
    {{"l40s"}, 0, any, "l40s", false},
    {{"l40"}, 0, any, "l40", false},
    {{"l4"}, 0, any, "l4", false},
    {{"rtx", "6000", "ada"}, 0, any, "rtx-6000-ada", false}, // not "Quadro RTX 6000" or "RTX PRO 6000 Blackwell"
    {{"rtx", "5090", "laptop"}, 0, any, "", false},          // GB203, 24 GB: not the desktop card
    {{"rtx", "5090"}, 28, any, "rtx-5090", false},
    {{"rtx", "4090"}, 0, any, "rtx-4090", false},
    {{"rtx", "4070", "ti"}, 0, any, "", false},
    {{"rtx", "4070", "super"}, 0, any, "", false},
    {{"rtx", "4070"}, 0, any, "rtx-4070", false},
    // Turing and Volta
    {{"t4"}, 0, any, "t4", false},
    {{"v100", "pcie", "16gb"}, 0, any, "v100-pcie-16gb", false},
    {{"v100", "pcie"}, 0, 24, "v100-pcie-16gb", true},
    {{"v100", "32gb"}, 0, any, "v100-sxm2-32gb", false},
    {{"v100", "sxm2"}, 24, any, "v100-sxm2-32gb", true},
    // AMD Instinct
    {{"mi300x"}, 0, any, "mi300x", false},
    {{"mi325x"}, 0, any, "mi325x", false},
    {{"mi355x"}, 0, any, "mi355x", false},
};

// Lower case, split on spaces, dashes and underscores.
std::vector<std::string> tokens_of(const std::string& name)
{
  std::string n;
  for (char c : name)
    n += c == '-' || c == '_' ? ' ' : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::istringstream in(n);
  std::vector<std::string> out;
  for (std::string t; in >> t;)
    out.push_back(t);
  return out;
}

} // namespace

std::string gpu_id_from_device_name(const std::string& name, double memory_bytes)
{
  std::vector<std::string> have = tokens_of(name);
  double gib                    = memory_bytes / (1024.0 * 1024 * 1024);
  for (const NameRule& r : rules) {
    bool all = true;
    for (const char* t : r.tokens) {
      bool found = false;
      for (const std::string& h : have)
        found = found || h == t;
      all = all && found;
    }
    if (!all)
      continue;
    if (memory_bytes <= 0 && r.needs_memory)
      continue;
    if (memory_bytes > 0 && (gib < r.min_gib || gib >= r.max_gib))
      continue;
    return r.id;
  }
  return "";
}

} // namespace memwall
