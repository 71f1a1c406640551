#include "workloads/trace/TraceImporter.hpp"

#include "base/InputError.hpp"
#include "workloads/trace/ExportedTraceImporter.hpp"
#include "workloads/trace/RankImporter.hpp"

#include <algorithm>
#include <map>

namespace memwall {

OpDag import_traces(const std::vector<KinetoTrace>& traces, const ClusterSpec& cluster, TraceImport how)
{
  for (const KinetoTrace& t : traces)
    if (!t.memwall_ops.empty())
      return import_exported(traces, cluster);
  OpDag dag;
  how.cluster = &cluster;
  int files = static_cast<int>(traces.size()), world = files;
  for (const KinetoTrace& t : traces)
    world = std::max(world, t.world_size);
  bool given      = how.ranks > 0;
  how.as_recorded = how.same_gpu && (!given || how.ranks == world);
  if (!given) // as recorded no collective is modelled: only the traced GPUs are needed
    how.ranks = how.as_recorded || world % files != 0 ? files : world;
  if (given && how.ranks % files != 0)
    throw InputError(traces.front().file + ": workload.ranks (" + std::to_string(how.ranks) +
                     ") must be a multiple of the number of traces (" + std::to_string(files) + ")");
  if (how.ranks > cluster.total_gpus())
    throw InputError(
        traces.front().file + ": " +
        (given ? "workload.ranks (" + std::to_string(how.ranks) + ")"
               : "the job's " + std::to_string(how.ranks) + " ranks (one per trace, or its recorded world_size)") +
        " is more than the cluster's " + std::to_string(cluster.total_gpus()) +
        " GPUs (hardware.nodes x hardware.gpus_per_node)" + (given ? "" : "; or set workload.ranks"));
  // Rank r on the cluster's GPU r; the collectives span all ranks (data parallelism).
  std::vector<DeviceRef> all;
  for (int r = 0; r < how.ranks; ++r)
    all.push_back({DeviceKind::gpu, r / cluster.gpus_per_node, r % cluster.gpus_per_node});
  how.group = dag.add_group(all);
  std::vector<OpId> collectives;
  size_t expected = 0;
  int next        = 0;
  for (const KinetoTrace& t : traces) {
    std::map<int, DeviceRef> gpus;
    for (const TraceGpuOp& g : t.gpu_ops)
      gpus.emplace(g.device, DeviceRef{});
    for (auto& [dev, ref] : gpus) {
      if (next >= cluster.total_gpus())
        throw InputError(t.file + ": the traces use more GPUs than the cluster's " +
                         std::to_string(cluster.total_gpus()) + " (hardware.nodes x hardware.gpus_per_node)");
      ref = {DeviceKind::gpu, next / cluster.gpus_per_node, next % cluster.gpus_per_node};
      ++next;
    }
    RankImporter rank(t, dag, gpus, how, collectives, &t == &traces.front());
    rank.run();
    if (&t == &traces.front())
      expected = collectives.size();
    else if (!how.as_recorded && rank.collectives_seen() != expected)
      throw InputError(t.file + ": ranks disagree: " + std::to_string(rank.collectives_seen()) +
                       " NCCL collectives here, " + std::to_string(expected) + " in " + traces.front().file);
    for (const auto& [dev, gpu] : gpus)
      dag.set_represents(gpu, how.ranks / static_cast<int>(traces.size()));
  }
  return dag;
}

} // namespace memwall
