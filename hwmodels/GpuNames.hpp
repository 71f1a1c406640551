#pragma once
// The names drivers and frameworks give GPUs (nvidia-smi, cudaGetDeviceProperties,
// torch.cuda.get_device_name, a PyTorch profiler trace's deviceProperties), mapped to
// catalog ids: "NVIDIA H100 80GB HBM3" -> h100-sxm-80gb, "NVIDIA A100-PG509-200" (an
// A100 SXM4 40GB board) -> a100-sxm4-40gb, "Tesla V100-SXM2-32GB" -> v100-sxm2-32gb.
// One table, used by memwall-gpubench and the trace importer. Plain C++ (no catalog
// reading): nvcc builds it into gpubench too.
#include <string>

namespace memwall {

// The catalog id of the GPU a device name and (where known, else 0) its memory in bytes
// describe; "" when the table has no such GPU or the name alone cannot tell (an "A100"
// of unknown memory).
std::string gpu_id_from_device_name(const std::string& name, double memory_bytes = 0);

} // namespace memwall
