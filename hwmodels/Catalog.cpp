#include "hwmodels/Catalog.hpp"

#include "hwmodels/CatalogText.hpp"
#include "hwmodels/CollectivesFrom.hpp"

#include <algorithm>
#include <map>

namespace memwall {
namespace {

const char* const gpus_file  = "hwmodels/catalog/gpus.yaml";
const char* const nodes_file = "hwmodels/catalog/nodes.yaml";

const YAML::Node& gpus_root()
{
  static const YAML::Node root = YAML::Load(catalog_gpus_yaml);
  return root;
}

const YAML::Node& nodes_root()
{
  static const YAML::Node root = YAML::Load(catalog_nodes_yaml);
  return root;
}

std::vector<std::string> keys_of(const YAML::Node& root)
{
  std::vector<std::string> ids;
  for (const auto& kv : root)
    ids.push_back(kv.first.Scalar());
  return ids;
}

// Required when there is no base; otherwise optional with the base's value as default.
double q(ParamReader& r, const std::string& key, QuantityKind kind, const double* base, const std::string& desc)
{
  return base ? r.quantity(key, kind, *base, desc) : r.required_quantity(key, kind, desc);
}

// A preset id, or a mapping with an optional `preset` to start from and overrides. A
// mapping without `preset` overrides the fallback (the node's GPU, say) where there is
// one, so `--set hardware.gpu.hbm_achievable_bw=...` changes one field of the GPU the
// spec already has; without a fallback the mapping must be complete.
template <typename Spec, typename Preset, typename Read>
Spec preset_or_inline(ParamReader& r, const std::string& key, const std::string& desc, const Spec* fallback,
                      Preset preset, Read read)
{
  YAML::Node n = r.take(key, "preset id or mapping", desc);
  if (n.IsDefined() && n.IsScalar())
    return preset(n.Scalar(), r.location(key));
  if (n.IsDefined() && n.IsMap()) {
    ParamReader inner  = r.nested(n, key);
    YAML::Node base_id = inner.take("preset", "preset id", "preset to start from; other keys override it");
    inner.defaults_from_preset();
    if (base_id.IsDefined()) {
      Spec base = preset(base_id.Scalar(), inner.location("preset"));
      Spec out  = read(inner, &base);
      out.id    = base.id + "-custom";
      return out;
    }
    if (fallback) {
      Spec out = read(inner, fallback);
      out.id   = fallback->id + "-custom";
      return out;
    }
    Spec out = read(inner, nullptr);
    out.id   = "custom";
    return out;
  }
  if (n.IsDefined())
    r.fail(key, "expected a preset id or a mapping");
  if (fallback)
    return *fallback;
  r.fail(key, "is required (" + desc + ")");
}

// A quantity that must exceed zero; `why` (" when ...", " (...)") follows "must be positive".
void require_positive(const ParamReader& r, const char* key, double v, const char* why = "")
{
  if (!(v > 0))
    r.fail(key, std::string("must be positive") + why);
}

} // namespace

std::vector<std::string> gpu_preset_ids() { return keys_of(gpus_root()); }
bool is_gpu_preset(const std::string& id)
{
  std::vector<std::string> ids = gpu_preset_ids();
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}
std::vector<std::string> node_preset_ids() { return keys_of(nodes_root()); }

GpuSpec gpu_preset(const std::string& id, const std::string& where)
{
  static std::map<std::string, GpuSpec> cache;
  if (auto it = cache.find(id); it != cache.end())
    return it->second;
  YAML::Node n = gpus_root()[id];
  if (!n.IsDefined())
    throw_unknown_preset("GPU preset", id, gpu_preset_ids(), where, "gpus");
  ParamReader r(n, gpus_file, id);
  GpuSpec g = read_gpu(r, nullptr);
  g.id      = id;
  if (auto p = catalog_profiles().find(id); p != catalog_profiles().end()) {
    GpuProfile profile = read_profile(p->second, "hwmodels/catalog/profiles/" + id + ".yaml");
    profile.name       = "catalog " + id;
    g.profile          = std::make_shared<GpuProfile>(std::move(profile));
  }
  take_collectives(g, r.location("collectives_from"));
  cache.emplace(id, g);
  return g;
}

NodeSpec node_preset(const std::string& id, const std::string& where)
{
  YAML::Node n = nodes_root()[id];
  if (!n.IsDefined())
    throw_unknown_preset("node preset", id, node_preset_ids(), where, "nodes");
  ParamReader r(n, nodes_file, id);
  NodeSpec node = read_node(r, nullptr);
  node.id       = id;
  return node;
}

GpuSpec read_gpu(ParamReader& r, const GpuSpec* base)
{
  using K          = QuantityKind;
  GpuSpec g        = base ? *base : GpuSpec{};
  const GpuSpec* b = base;
  g.name           = b ? r.text("name", b->name, "marketing name") : r.required_text("name", "marketing name");
  g.vendor         = r.choice("vendor", b ? b->vendor : "nvidia", {"nvidia", "amd"}, "GPU vendor");
  g.collectives_from =
      r.text("collectives_from", b ? b->collectives_from : "",
             "catalog GPU of the same NVLink generation whose measured NCCL curves time this GPU's collectives "
             "inside a node where its own profile has none, scaled by the nvlink_bw ratio (empty: none)");
  if (!g.collectives_from.empty()) {
    if (!is_gpu_preset(g.collectives_from))
      r.fail("collectives_from",
             "'" + g.collectives_from + "' is not a catalog GPU; allowed: " + join(gpu_preset_ids()));
  }
  // Each field as GpuSpec.hpp declares it: key, unit, default (the base's), meaning.
#define MEMWALL_READ_REQUIRED(key, unit, description) g.key = q(r, #key, K::unit, b ? &b->key : nullptr, description);
#define MEMWALL_READ_QUANTITY(key, unit, def, description) g.key = r.quantity(#key, K::unit, g.key, description);
#define MEMWALL_READ_NUMBER(key, def, least, most, description) g.key = r.number(#key, g.key, description, least, most);
#define MEMWALL_READ_COUNT(key, def, least, most, description)                                                         \
  g.key = static_cast<int>(r.integer(#key, g.key, description, least, "", most));
  MEMWALL_GPU_REQUIRED_QUANTITIES(MEMWALL_READ_REQUIRED)
  MEMWALL_GPU_QUANTITIES(MEMWALL_READ_QUANTITY)
  MEMWALL_GPU_NUMBERS(MEMWALL_READ_NUMBER)
  MEMWALL_GPU_COUNTS(MEMWALL_READ_COUNT)
  ParamReader flops = r.section("peak_flops", "dense peak FLOP/s per dtype the GPU supports");
  for (Dtype d : all_dtypes()) {
    double def = g.peak(d);
    double v   = flops.quantity(dtype_name(d), K::flop_rate, def, std::string("peak ") + dtype_name(d) + " FLOP/s");
    if (v > 0)
      g.peak_flops[d] = v;
    else
      g.peak_flops.erase(d);
  }
  flops.finish();
  if (!g.supports(Dtype::fp32))
    r.fail("peak_flops", "must give at least fp32");
  if (g.matmul_efficiency <= 0)
    r.fail("matmul_efficiency", "an efficiency lies in (0, 1]");
  if (g.attention_efficiency <= 0)
    r.fail("attention_efficiency", "an efficiency lies in (0, 1]");
  // A decode kernel streaming at none of the bandwidth would never end.
  if (g.kv_read_small_share <= 0)
    r.fail("kv_read_small_share", "a share of hbm_peak_bw lies in (0, 1]");
  if (g.kv_read_share <= 0)
    r.fail("kv_read_share", "a share of hbm_peak_bw lies in (0, 1]");
  if (g.kv_read_fp8_factor <= 0)
    r.fail("kv_read_fp8_factor", "a factor on the 16-bit rate lies in (0, 1]");
  // A GPU derived with another datasheet bandwidth and no sustained one of its own
  // sustains the same fraction of it as its base.
  if (b && b->hbm_peak_bw > 0 && g.hbm_peak_bw != b->hbm_peak_bw && !r.given("hbm_achievable_bw"))
    g.hbm_achievable_bw = b->hbm_achievable_bw * g.hbm_peak_bw / b->hbm_peak_bw;
  // The power limit's model (sim/timing/PowerGovernor) needs what the rest of the GPU draws,
  // and a limit the tensor cores alone can be slowed to meet.
  if (g.tensor_core_w > 0) {
    if (g.power_limit() <= 0)
      r.fail("tensor_core_w", "needs a power limit: give power_limit_w or tdp_w");
    if (g.idle_w <= 0)
      r.fail("idle_w", "must be above 0 W where tensor_core_w is given (the board's draw with the SMs idle)");
    if (g.hbm_stream_w < g.idle_w)
      r.fail("hbm_stream_w", "must be at least idle_w (" + std::to_string(int(g.idle_w)) + " W)");
    if (g.power_limit() <= g.hbm_stream_w)
      r.fail(g.power_limit_w > 0 ? "power_limit_w" : "tdp_w", "the limit must be above hbm_stream_w (" +
                                                                  std::to_string(int(g.hbm_stream_w)) +
                                                                  " W): only the tensor cores are slowed to meet it");
  }
  require_positive(r, "memory_bytes", g.memory_bytes);
  require_positive(r, "hbm_achievable_bw", g.hbm_achievable_bw);
  require_positive(r, "h2d_bw", g.h2d_bw);
  require_positive(r, "d2h_bw", g.d2h_bw);
  r.finish();
  return g;
}

GpuSpec read_gpu_ref(ParamReader& r, const std::string& key, const std::string& desc, const GpuSpec* fallback)
{
  GpuSpec g = preset_or_inline<GpuSpec>(r, key, desc, fallback, gpu_preset, read_gpu);
  take_collectives(g, r.location(key)); // an inline GPU naming collectives_from of its own
  return g;
}

NodeSpec read_node_ref(ParamReader& r, const std::string& key, const std::string& desc, const NodeSpec* fallback)
{
  return preset_or_inline<NodeSpec>(r, key, desc, fallback, node_preset, read_node);
}

NodeSpec read_node(ParamReader& r, const NodeSpec* base)
{
  using K           = QuantityKind;
  NodeSpec n        = base ? *base : NodeSpec{};
  const NodeSpec* b = base;
  n.name            = b ? r.text("name", b->name, "node name") : r.required_text("name", "node name");
  n.gpu =
      read_gpu_ref(r, "gpu", "the node's GPU: preset id (see `memwall list gpus`) or mapping", b ? &b->gpu : nullptr);
  n.gpus = static_cast<int>(b ? r.integer("gpus", b->gpus, "GPUs in the node", 1, "", 1024)
                              : r.required_integer("gpus", "GPUs in the node", 1, 1024));
  std::string fabric =
      r.choice("fabric", gpu_fabric_name(n.fabric), {"nvswitch", "mesh", "pcie"},
               "how GPUs reach each other: NVLink switches; direct links between every pair (Infinity "
               "Fabric, NVLink bridges), modelled as a switch of each GPU's link bandwidth; or through "
               "host memory over PCIe");
  n.fabric = fabric == "nvswitch" ? GpuFabric::nvswitch : fabric == "mesh" ? GpuFabric::mesh : GpuFabric::pcie;
  if (gpu_links(n.fabric) && n.gpu.nvlink_bw <= 0)
    r.fail("fabric", fabric + " needs a GPU with nvlink_bw > 0");
  // The preset's system power, for its own GPUs and count: other GPUs swap their TDP in;
  // another GPU count has no datasheet figure (unknown unless power_w is given).
  if (b) {
    n.power_w = swapped_gpu_power(b->power_w, b->gpu, n.gpu, b->gpus);
    if (n.gpus != b->gpus)
      n.power_w = 0;
  }
  // Each field as NodeSpec.hpp declares it.
#define MEMWALL_READ_NODE_REQUIRED(key, unit, description)                                                             \
  n.key = q(r, #key, K::unit, b ? &b->key : nullptr, description);
#define MEMWALL_READ_NODE_QUANTITY(key, unit, def, description) n.key = r.quantity(#key, K::unit, n.key, description);
#define MEMWALL_READ_NODE_NUMBER(key, def, least, most, description)                                                   \
  n.key = r.number(#key, n.key, description, least, most);
#define MEMWALL_READ_NODE_COUNT(key, def, least, most, description)                                                    \
  n.key = static_cast<int>(r.integer(#key, n.key, description, least, "", most));
  MEMWALL_NODE_COUNTS(MEMWALL_READ_NODE_COUNT)
  MEMWALL_NODE_REQUIRED_QUANTITIES(MEMWALL_READ_NODE_REQUIRED)
  MEMWALL_NODE_QUANTITIES(MEMWALL_READ_NODE_QUANTITY)
  MEMWALL_NODE_NUMBERS(MEMWALL_READ_NODE_NUMBER)
  if (n.gpus_per_pcie_switch > n.gpus)
    r.fail("gpus_per_pcie_switch", "cannot exceed gpus (" + std::to_string(n.gpus) + ")");
  // Every rate a run may move work over is positive: a zero passed here and then
  // stalled the replay for ever (exit 3) or aborted SimGrid (a host of no speed).
  require_positive(r, "cpu_flops_per_socket", n.cpu_flops_per_socket, " (the CPU runs offloaded optimizer steps)");
  require_positive(r, "dram_bw_per_socket", n.dram_bw_per_socket);
  require_positive(r, "pageable_copy_bw", n.pageable_copy_bw, " (copies from pageable host memory are staged at it)");
  require_positive(r, "pcie_uplink_bw", n.pcie_uplink_bw);
  if (n.sockets > 1)
    require_positive(r, "socket_link_bw", n.socket_link_bw, " when the node has more than one socket");
  if (n.nics > 0)
    require_positive(r, "nic_bw", n.nic_bw, " when the node has NICs");
  if (n.nvme_bytes > 0) {
    require_positive(r, "nvme_read_bw", n.nvme_read_bw, " when the node has NVMe");
    require_positive(r, "nvme_write_bw", n.nvme_write_bw, " when the node has NVMe");
  }
  r.finish();
  return n;
}

const char* gpu_fabric_name(GpuFabric f)
{
  switch (f) {
    case GpuFabric::nvswitch: return "nvswitch";
    case GpuFabric::mesh: return "mesh";
    case GpuFabric::pcie: return "pcie";
  }
  return "pcie";
}

} // namespace memwall
