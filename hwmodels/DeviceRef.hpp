#pragma once
// Names one place that holds memory or runs work: a GPU, a CPU socket (with its DRAM)
// or a node's NVMe. Workloads refer to devices only through these.
#include <compare>
#include <cstdint>
#include <string>

namespace memwall {

enum class DeviceKind : uint8_t { gpu, host, nvme };

struct DeviceRef {
  DeviceKind kind = DeviceKind::gpu;
  int32_t node    = 0;
  int32_t index   = 0; // local GPU index, socket index, or 0 for NVMe

  auto operator<=>(const DeviceRef&) const = default;

  std::string name() const
  {
    const char* k = kind == DeviceKind::gpu ? "gpu" : kind == DeviceKind::host ? "cpu" : "nvme";
    return "node" + std::to_string(node) + "." + k + std::to_string(index);
  }
};

// For unordered containers of devices (the replay looks pools up per memory op).
struct DeviceRefHash {
  size_t operator()(const DeviceRef& d) const
  {
    return (static_cast<size_t>(d.kind) << 56) ^ (static_cast<size_t>(static_cast<uint32_t>(d.node)) << 20) ^
           static_cast<size_t>(static_cast<uint32_t>(d.index));
  }
};

} // namespace memwall
