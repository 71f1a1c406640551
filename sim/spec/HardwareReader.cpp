#include "sim/spec/HardwareReader.hpp"

#include "hwmodels/Catalog.hpp"
#include "hwmodels/ProfileScaling.hpp"

#include "sim/collective/CollectiveAlgorithm.hpp"
#include <filesystem>

namespace memwall {

namespace {

// The catalog GPU an inline GPU starts from ("h100-sxm-80gb-custom" -> "h100-sxm-80gb").
std::string catalog_id(const GpuSpec& gpu)
{
  std::string base = gpu.id;
  if (base.size() > 7 && base.compare(base.size() - 7, 7, "-custom") == 0)
    base.resize(base.size() - 7);
  return base;
}

// hardware.profile: which fitted profile times the GPU's kernels. A file is resolved
// against the spec's folder (as model.hf_config is) and laid over the GPU's shipped
// profile: what it measured replaces the shipped fit's, the rest stays.
void read_profile_choice(ParamReader& r, GpuSpec& gpu, const std::string& spec_dir)
{
  std::string choice = r.text("profile", "catalog",
                              "hardware profile: catalog (the GPU's shipped fit, where it has one; memwall list gpus), "
                              "none (the catalog's estimated efficiencies), or the path of a profile YAML written by "
                              "memwall calibrate fit (relative to the spec's folder), laid over the shipped fit");
  if (choice == "catalog")
    return;
  if (choice == "none") {
    gpu.profile.reset();
    return;
  }
  std::filesystem::path path(choice);
  if (path.is_relative() && !spec_dir.empty())
    path = std::filesystem::path(spec_dir) / path;
  GpuProfile p;
  try {
    p = load_profile(path.string());
  } catch (const InputError& e) {
    throw InputError(r.location("profile") + ": " + e.what());
  }
  p.name           = path.string();
  std::string base = catalog_id(gpu);
  if (p.gpu != base)
    r.fail("profile", choice + " is a profile of " + p.gpu + ", not of this spec's GPU " + gpu.id);
  gpu.profile = std::make_shared<GpuProfile>(gpu.profile ? overlay_profile(*gpu.profile, p) : std::move(p));
}

// A GPU changed from the one its profile measured (another peak, another bandwidth) is
// timed as changed (ProfileScaling.hpp), never as the measured part: a lower peak left
// the measured GEMM times and put MFU at 275 %; a lower hbm_achievable_bw narrowed the
// HBM link under kernels streaming at the measured 2.5 TB/s (408 % busy).
void scale_profile_to_gpu(GpuSpec& gpu)
{
  if (!gpu.profile || !is_gpu_preset(gpu.profile->gpu))
    return;
  ProfileScale s = profile_scale(*gpu.profile, gpu_preset(gpu.profile->gpu), gpu);
  if (s.any())
    gpu.profile = std::make_shared<GpuProfile>(scaled_profile(*gpu.profile, s));
}

// hardware.network.tiers and rail_optimized: a Clos fabric's layers (NetworkTier.hpp).
void read_tiers(ParamReader& net, ClusterSpec& c)
{
  const std::string item_keys = "{name, nodes, oversubscription, switch_latency_s}";
  YAML::Node list =
      net.take("tiers", "list of " + item_keys,
               "a Clos fabric's tiers from the bottom: each tier's groups of `nodes` nodes (the leaves' reach, a pod), "
               "the oversubscription of the links from a group to the layer above and that layer's switch latency",
               "[]: one switch joins every node");
  c.rail_optimized = net.flag("rail_optimized", false,
                              "one leaf switch a NIC rail in each group of the first tier (DGX SuperPOD): different "
                              "rails meet in the layer above");
  if (list.IsDefined() && !list.IsNull()) {
    if (!list.IsSequence())
      net.fail("tiers", "expected a list of tiers from the bottom, each " + item_keys);
    double below = c.switch_latency_s;
    for (size_t i = 0; i < list.size(); ++i) {
      std::string key = "tiers[" + std::to_string(i) + "]";
      if (!list[i].IsMap())
        net.fail(key, "expected a mapping " + item_keys);
      ParamReader t = net.nested(list[i], key);
      NetworkTier tier;
      tier.name = t.required_text("name", "how links and messages name the tier's groups (rack, pod)");
      bool word = !tier.name.empty() && tier.name[0] >= 'a' && tier.name[0] <= 'z' &&
                  tier.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_-") == std::string::npos;
      if (!word)
        t.fail("name", "'" + tier.name + "' is not a name: a lower-case letter, then letters, digits, '-' or '_'");
      for (const NetworkTier& other : c.tiers)
        if (other.name == tier.name)
          t.fail("name", "'" + tier.name + "' names two tiers");
      tier.nodes = static_cast<int>(t.required_integer("nodes", "nodes in one group of the tier", 1, 10'000'000));
      if (!c.tiers.empty() && (tier.nodes <= c.tiers.back().nodes || tier.nodes % c.tiers.back().nodes != 0))
        t.fail("nodes", std::to_string(tier.nodes) + " does not hold whole groups of the tier below (" +
                            std::to_string(c.tiers.back().nodes) + " nodes): groups nest, each a larger multiple");
      tier.oversubscription =
          t.number("oversubscription", 1.0,
                   "its NICs' bandwidth over that of the links from a group to the layer above; 1 = "
                   "non-blocking",
                   1.0, 1000);
      tier.switch_latency_s =
          t.quantity("switch_latency_s", QuantityKind::seconds, below, "latency of a switch of the layer above");
      below = tier.switch_latency_s;
      t.finish();
      c.tiers.push_back(tier);
    }
  }
  if (!c.tiers.empty() && net.given("oversubscription"))
    net.fail("oversubscription", "a fabric with tiers is oversubscribed per tier (tiers[i].oversubscription), not "
                                 "as a whole: give one or the other");
  if (c.rail_optimized && c.tiers.empty())
    net.fail("rail_optimized", "rails need tiers: the first tier's groups are the leaves' reach, the layer above "
                               "joins the rails");
}

} // namespace

void refuse_unused_estimates(const ParamReader& hw, const GpuSpec& gpu, bool generated_step)
{
  const GpuProfile* p = gpu.profile.get();
  if (!p || !is_gpu_preset(catalog_id(gpu)))
    return;
  GpuSpec catalog = gpu_preset(catalog_id(gpu));
  auto refuse     = [&](const std::string& key, const std::string& what) {
    hw.fail("gpu." + key, "would change nothing: " + what + " come from the GPU's fitted profile (" + p->name +
                                  "); give hardware.profile: none to time kernels by the catalog's estimates instead");
  };
  bool gemms_measured = !p->gemm.empty() || !p->gemm_passes.empty();
  if (generated_step && gemms_measured && gpu.matmul_efficiency != catalog.matmul_efficiency)
    refuse("matmul_efficiency", "GEMM times");
  if (!p->elementwise.empty() && gpu.kernel_overhead_s != catalog.kernel_overhead_s)
    refuse("kernel_overhead_s", "kernel launch times");
}

ClusterSpec read_hardware_section(ParamReader& r, std::string& collective_algorithm, const std::string& spec_dir)
{
  ClusterSpec c;
  c.node           = read_node_ref(r, "node", "node preset id (see `memwall list nodes`) or inline node", nullptr);
  GpuSpec node_gpu = c.node.gpu;
  c.node.gpu       = read_gpu_ref(r, "gpu", "replace the node's GPU: preset id or mapping", &node_gpu);
  if (gpu_links(c.node.fabric) && c.node.gpu.nvlink_bw <= 0) // the node's check, for the GPU that replaced its own
    r.fail("gpu", std::string("the node's fabric ") + gpu_fabric_name(c.node.fabric) +
                      " needs a GPU with nvlink_bw > 0 (a node of fabric pcie takes GPUs without NVLink)");
  // A node given other GPUs keeps the rest of its system's power: its GPUs' TDP is
  // swapped for theirs (unknown when either TDP is).
  c.node.power_w = swapped_gpu_power(c.node.power_w, node_gpu, c.node.gpu, c.node.gpus);
  read_profile_choice(r, c.node.gpu, spec_dir);
  scale_profile_to_gpu(c.node.gpu);
  c.nodes = static_cast<int>(r.integer("nodes", 1, "number of nodes", 1, "", 100'000));
  c.gpus_per_node =
      static_cast<int>(r.integer("gpus_per_node", c.node.gpus, "GPUs used per node; default: all", 1, "", 1024));
  if (c.gpus_per_node > c.node.gpus)
    r.fail("gpus_per_node",
           std::to_string(c.gpus_per_node) + " exceeds the node's " + std::to_string(c.node.gpus) + " GPUs");

  c.pue = r.number("pue", c.pue,
                   "power usage effectiveness: facility power over IT power (default: the 2024 average, Uptime "
                   "Institute)",
                   1.0, 10.0);
  c.usd_per_mwh =
      r.number("usd_per_mwh", c.usd_per_mwh,
               "price of electricity in USD per MWh (default: the 2024 US industrial average, EIA)", 0.0, 1e6);

  ParamReader net    = r.section("network", "scale-out network and collectives");
  c.oversubscription = net.number("oversubscription", 1.0,
                                  "each node's share of one switch joining every node; 1 = non-blocking (with tiers: "
                                  "per tier instead)",
                                  1.0, 1000);
  c.switch_latency_s = net.quantity("switch_latency_s", QuantityKind::seconds, c.switch_latency_s,
                                    "latency of the switch the nodes' NICs reach (leaf, top of rack)");
  read_tiers(net, c);
  c.node.nics   = static_cast<int>(net.integer("nics", c.node.nics, "NICs per node for compute traffic", 0, "", 1024));
  c.node.nic_bw = net.quantity("nic_bw", QuantityKind::rate, c.node.nic_bw, "bandwidth per NIC per direction");
  c.node.nic_latency_s = net.quantity("nic_latency_s", QuantityKind::seconds, c.node.nic_latency_s, "NIC latency");
  c.nvls               = net.flag("nvls", c.nvls,
                                  "NVLink SHARP (NCCL's NVLS) where the NVSwitch supports it (sm90 and later); false as with "
                                                "NCCL_NVLS_ENABLE=0 or without the fabric manager's multicast");
  collective_algorithm =
      net.choice("collective_algorithm", "nccl", collective_registry().names(), "how collectives become flows");
  if (c.nodes > 1 && (c.node.nics <= 0 || c.node.nic_bw <= 0))
    net.fail("nics", "a cluster of " + std::to_string(c.nodes) + " nodes needs nics > 0 and nic_bw > 0 (node " +
                         c.node.id + " has none)");
  net.finish();
  r.finish();
  return c;
}

} // namespace memwall
