#include "sim/spec/MemoryReader.hpp"

#include <algorithm>

#include "sim/paging/EvictionPolicy.hpp"
#include "sim/paging/PrefetchPolicy.hpp"

namespace memwall {
namespace {

// The categories a program can allocate as managed memory: all but the CUDA context.
std::vector<std::string> manageable()
{
  std::vector<std::string> v;
  for (const char* n : mem_category_names())
    if (std::string(n) != "context")
      v.push_back(n);
  return v;
}

CategorySet read_categories(ParamReader& r, const std::string& key, const std::string& desc)
{
  static const std::vector<std::string> names = manageable();
  YAML::Node n                                = r.take(key, "list of: " + join(names), desc, "[]");
  CategorySet set;
  if (!n.IsDefined() || n.IsNull())
    return set;
  if (!n.IsSequence())
    r.fail(key, "expected a list of categories, e.g. [activations, kv_cache]; allowed: " + join(names));
  for (const auto& item : n) {
    std::string name = item.IsScalar() ? item.Scalar() : "";
    bool known       = false;
    for (size_t c = 0; c < mem_category_count; ++c)
      if (name == mem_category_names()[c] && name != "context") {
        set.set(c);
        known = true;
      }
    if (!known)
      r.fail(key, "'" + (item.IsScalar() ? name : std::string("(not a name)")) +
                      "' is not a category that can be managed; allowed: " + join(names));
  }
  return set;
}

} // namespace

UnifiedMemoryConfig managed_defaults(const GpuSpec& gpu)
{
  UnifiedMemoryConfig c;
  const GpuProfile* p = gpu.profile.get();
  if (!p || !p->copies.count("managed_fault"))
    return c;
  // memwall-gpubench's managed_fault: a kernel first-touches managed memory resident on
  // the host, one byte per 4 KiB page. Its largest sizes stream at the on-demand rate,
  // taken relative to pinned copies measured on the same machine (else the catalog's
  // h2d_bw); its smallest (1 MiB, one batch of faults) costs its latency beyond the bytes.
  const LatencyBandwidthCurve& f = p->copies.at("managed_fault");
  double copy = p->copies.count("h2d_pinned") ? p->copies.at("h2d_pinned").regimes.back().bandwidth : gpu.h2d_bw;
  if (copy <= 0)
    return c;
  c.migration_efficiency = std::clamp(f.regimes.back().bandwidth / copy, 0.001, 1.0);
  if (f.regimes.front().latency_s > 0)
    c.fault_batch_s = f.regimes.front().latency_s;
  return c;
}

UnifiedMemoryConfig read_memory_section(ParamReader& r, const GpuSpec& gpu)
{
  UnifiedMemoryConfig c = managed_defaults(gpu);
  std::string mode      = r.choice("mode", "explicit", {"explicit", "unified"},
                                   "explicit: cudaMalloc, an allocation that does not fit is out of memory; unified: "
                                        "cudaMallocManaged for every category but the CUDA context, pages migrate on demand");
  c.managed             = read_categories(r, "managed",
                                          "categories allocated as managed memory while the rest stay explicit, e.g. "
                                                      "[activations]; with mode: unified leave it out");
  if (mode == "unified") {
    if (c.managed.any())
      r.fail("managed", "give either mode: unified (every category managed) or a list of managed categories, not both");
    for (size_t i = 0; i < mem_category_count; ++i)
      c.managed.set(i, static_cast<MemCategory>(i) != MemCategory::context);
  }
  c.prefetch = r.choice("prefetch", "none", prefetch_registry().names(),
                        "cudaMemPrefetchAsync: none, layer (each kernel's tensors before it, the next one's while it "
                        "runs) or whole (each allocation when made); `memwall list prefetch-policies`");
  c.eviction = r.choice("eviction", "fifo", eviction_registry().names(),
                        "which 2 MiB chunk leaves the GPU first; `memwall list eviction-policies`");
  c.warm     = r.choice("start", "warm", {"warm", "cold"},
                        "where managed weights and optimizer states start: warm (on the GPU as far as they fit, as a "
                            "previous step left them) or cold (on the host, as just after loading: the step faults them in)") ==
           "warm";
  c.preferred_host =
      r.choice("preferred_location", "gpu", {"gpu", "host"},
               "cudaMemAdviseSetPreferredLocation: host keeps managed pages on the host, read by the GPU "
               "over PCIe") == "host";
  c.accessed_by          = read_categories(r, "accessed_by",
                                           "cudaMemAdviseSetAccessedBy(GPU): managed categories the GPU reads over PCIe where "
                                                    "they lie, without migrating");
  c.fault_batch_s        = r.quantity("fault_batch_s", QuantityKind::seconds, c.fault_batch_s,
                                      "driver time to service one batch of GPU page faults, beside the transfer (14 us "
                                             "measured per fault group on PCIe 3, calibration/data/uvm.md; a GPU whose profile "
                                             "measured managed_fault: the smallest first touch's time beyond its bytes)");
  c.faults_per_batch     = static_cast<int>(r.integer("faults_per_batch", c.faults_per_batch,
                                                      "faults the driver fetches from the fault buffer per batch "
                                                          "(nvidia-uvm: 256)",
                                                      1, "", 1 << 20));
  c.migration_efficiency = r.number("migration_efficiency", c.migration_efficiency,
                                    "on-demand migration rate over the explicit copy rate of the same link "
                                    "(7.4 / 12.2 GB/s measured, calibration/data/uvm.md; a GPU whose profile measured "
                                    "managed_fault: its rate over the GPU's h2d_bw)",
                                    0.001, 1.0);
  c.chunk_bytes          = r.quantity("chunk_bytes", QuantityKind::bytes, c.chunk_bytes,
                                      "the driver's root chunk: unit of residency, prefetch completion and eviction (2 MiB)");
  c.big_page_bytes       = r.quantity("big_page_bytes", QuantityKind::bytes, c.big_page_bytes,
                                      "what one fault migrates before the prefetcher grows it (64 KiB)");
  c.prefetch_density     = r.number("prefetch_density", c.prefetch_density,
                                    "fraction of a chunk's big pages that must fault before the density prefetcher "
                                        "migrates the rest (nvidia-uvm: 51 %)",
                                    0.0, 1.0);
  r.finish();
  // 4 KiB is the smallest page there is; below it a chunk count would explode.
  if (c.big_page_bytes < 4096)
    r.fail("big_page_bytes", "needs at least 4096 bytes (a CPU page)");
  if (c.chunk_bytes < 64 * 1024 || c.big_page_bytes > c.chunk_bytes)
    r.fail("chunk_bytes", "needs at least 64 KiB and at least big_page_bytes");
  if ((c.accessed_by & ~c.managed).any())
    r.fail("accessed_by", "lists a category that is not managed: only managed memory can be mapped for remote access");
  return c;
}

} // namespace memwall
