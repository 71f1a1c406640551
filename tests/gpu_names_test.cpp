// The names drivers and PyTorch give GPUs, mapped to catalog ids (hwmodels/GpuNames):
// the strings as nvidia-smi, cudaGetDeviceProperties and torch.cuda.get_device_name
// print them, with the memory they report where the name alone cannot tell.
#include "hwmodels/Catalog.hpp"
#include "hwmodels/GpuNames.hpp"

#include <catch2/catch.hpp>

using namespace memwall;

TEST_CASE("device_names_of_real_gpus_map_to_their_catalog_ids", "[catalog][names]")
{
  const double GiB = 1024.0 * 1024 * 1024;
  struct Case {
    const char* name;
    double memory;
    const char* id;
  };
  const Case cases[] = {
      {"NVIDIA H100 80GB HBM3", 85017493504, "h100-sxm-80gb"}, // the shared H100 trace and gpubench
      {"NVIDIA H100 80GB HBM3", 0, "h100-sxm-80gb"},
      {"NVIDIA H100 PCIe", 85520809984, "h100-pcie-80gb"},
      {"NVIDIA H100 NVL", 99857989632, ""}, // 94 GB part: not in the catalog
      {"NVIDIA H800", 85520809984, "h800-sxm-80gb"},
      {"NVIDIA H200", 150109880320, "h200-sxm-141gb"}, // gpubench on the measured H200
      {"NVIDIA H200 NVL", 0, "h200-nvl"},
      {"NVIDIA B200", 0, "b200"},
      {"NVIDIA GB200", 0, "gb200"},
      {"NVIDIA A100-SXM4-80GB", 85899345920, "a100-sxm4-80gb"},
      {"NVIDIA A100-SXM4-40GB", 42505273344, "a100-sxm4-40gb"},
      {"NVIDIA A100-PG509-200", 42297524224, "a100-sxm4-40gb"}, // the shared A100 trace's board name
      {"NVIDIA A100-PG509-200", 0, ""},                         // no memory: 40 or 80 GB cannot be told
      {"NVIDIA A100-SXM-80GB", 85899345920, "a100-sxm4-80gb"},
      {"NVIDIA A100 80GB PCIe", 85899345920, "a100-pcie-80gb"},
      {"NVIDIA A100-PCIE-40GB", 42505273344, ""},
      {"NVIDIA A40", 48 * GiB, "a40"},
      {"NVIDIA L40S", 48 * GiB, "l40s"},
      {"NVIDIA GeForce RTX 4090", 24 * GiB, "rtx-4090"},
      {"NVIDIA GeForce RTX 4070", 12 * GiB, "rtx-4070"},
      {"NVIDIA GeForce RTX 4070 Ti", 12 * GiB, ""},
      {"Tesla T4", 15 * GiB, "t4"},
      {"Tesla V100-SXM2-32GB", 34089730048, "v100-sxm2-32gb"},
      {"Tesla V100-SXM2-16GB", 16 * GiB, ""},
      {"Tesla V100-PCIE-16GB", 16 * GiB, "v100-pcie-16gb"},
      {"AMD Instinct MI300X", 192 * GiB, "mi300x"},
      {"NVIDIA Quadro RTX 8000", 48 * GiB, ""},
      // The GPUs people serve on (issue 53): the names and totals their readouts print.
      {"NVIDIA L4", 23570219008, "l4"},
      {"NVIDIA L40", 47674556416, "l40"},
      {"NVIDIA A10G", 23684186112, "a10g"},
      {"NVIDIA A10", 23609475072, ""},
      {"NVIDIA GeForce RTX 3090", 25318916096, "rtx-3090"},
      {"NVIDIA GeForce RTX 3090 Ti", 24 * GiB, ""},
      {"NVIDIA RTX A6000", 51160023040, "rtx-a6000"},
      {"NVIDIA RTX 6000 Ada Generation", 51002867712, "rtx-6000-ada"},
      {"Quadro RTX 6000", 0, ""},
      {"NVIDIA RTX PRO 6000 Blackwell Server Edition", 0, ""},
      {"NVIDIA GeForce RTX 5090", 33668857856, "rtx-5090"},
      {"NVIDIA GeForce RTX 5090 Laptop GPU", 0, ""},
      {"NVIDIA H20", 102010716160, "h20"},
      {"NVIDIA B300 SXM6 AC", 287430410240, "b300"},
      {"NVIDIA GB300", 296889614336, "gb300"},
      {"AMD Instinct MI325X", 274861129728, "mi325x"},
  };
  for (const Case& c : cases) {
    INFO(c.name << " with " << c.memory << " bytes");
    CHECK(gpu_id_from_device_name(c.name, c.memory) == c.id);
  }
  // Every id the table gives is a catalog GPU.
  for (const Case& c : cases)
    if (*c.id)
      CHECK_NOTHROW(gpu_preset(c.id));
}
