#pragma once
// An op as JSON (every field, enums by name), for `memwall export`: the generated op
// DAG written as a PyTorch profiler trace whose events carry their op in args.memwall,
// read back to the same DAG (TraceImporter). One reader for recorded and generated
// workloads.
#include "workloads/dag/OpDag.hpp"

#include <nlohmann/json.hpp>

namespace memwall {

nlohmann::json op_to_json(const Op& op);
// InputError naming `where` for a field that is missing, of the wrong type or an
// unknown name.
Op op_from_json(const nlohmann::json& j, const std::string& where);

nlohmann::json device_to_json(const DeviceRef& d);
DeviceRef device_from_json(const nlohmann::json& j, const std::string& where);

} // namespace memwall
