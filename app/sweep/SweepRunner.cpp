#include "app/sweep/SweepRunner.hpp"

#include "base/ChildPool.hpp"
#include "sim/Simulation.hpp"

namespace memwall {

std::string run_point(const SweepSpec& sweep, const SweepPoint& point, const PointSummary& summarize)
{
  ExperimentSpec spec = point_spec(sweep, point);
  // No record per op (the time breakdown is kept as intervals); memory timelines only
  // when the results file keeps them.
  RunResult r = simulate(spec, /*in_child=*/false,
                         {/*progress=*/false, /*coalesce=*/true, /*all_records=*/false, sweep.record_memory});
  return summarize(sweep, point, spec, r);
}

void run_points(const SweepSpec& sweep, const std::vector<int64_t>& todo, int jobs, const PointSummary& summarize,
                const std::function<void(const PointOutcome&)>& done)
{
  run_in_children(
      todo.size(), jobs,
      [&](size_t i) { return run_point(sweep, sweep.points.at(static_cast<size_t>(todo[i])), summarize); },
      [&](size_t i, const ChildOutcome& out) {
        done({todo[i], out.kind == ChildOutcome::Kind::result, out.data});
      });
}

} // namespace memwall
