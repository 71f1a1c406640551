#pragma once
// The hardware catalog: GPU and node presets from catalog/*.yaml (embedded in the binary
// at build time), and the readers that turn a YAML mapping into a GpuSpec or NodeSpec,
// used both for catalog entries and for inline hardware in a spec.
#include "base/ParamReader.hpp"
#include "hwmodels/NodeSpec.hpp"

#include <string>
#include <vector>

namespace memwall {

std::vector<std::string> gpu_preset_ids();
// Whether `id` is a GPU of the catalog.
bool is_gpu_preset(const std::string& id);
std::vector<std::string> node_preset_ids();
// Throw InputError naming close identifiers when `id` is unknown; `where` prefixes it.
GpuSpec gpu_preset(const std::string& id, const std::string& where = "");
NodeSpec node_preset(const std::string& id, const std::string& where = "");

// Reads a GPU description. With a base, every key is optional and overrides the base.
GpuSpec read_gpu(ParamReader& r, const GpuSpec* base);
// Reads a node description; its `gpu` key is a preset id or an inline GPU mapping.
NodeSpec read_node(ParamReader& r, const NodeSpec* base);

// The value of `key` in r: a preset id, or a mapping with an optional `preset` to start
// from and keys that override it. Absent: `fallback`, or an error when there is none.
GpuSpec read_gpu_ref(ParamReader& r, const std::string& key, const std::string& desc, const GpuSpec* fallback);
NodeSpec read_node_ref(ParamReader& r, const std::string& key, const std::string& desc, const NodeSpec* fallback);

} // namespace memwall
