#include "SweepRunner.hpp"

#include "ChildPool.hpp"
#include "Simulation.hpp"

namespace memwall {

std::string run_point(const SweepSpec& sweep, const SweepPoint& point, const PointSummary& summarize)
{
  ExperimentSpec spec = point_spec(sweep, point);
  RunResult r         = simulate(spec, /*in_child=*/false);
  return summarize(point, spec, r); // with the ops: the time breakdown is read from them
}

void run_points(const SweepSpec& sweep, const std::vector<int64_t>& todo, int jobs, const PointSummary& summarize,
                const std::function<void(const PointOutcome&)>& done)
{
  ChildPool pool(jobs);
  size_t next = 0;
  while (next < todo.size() || pool.running() > 0) {
    while (next < todo.size() && !pool.full()) {
      const SweepPoint& p = sweep.points.at(static_cast<size_t>(todo[next++]));
      pool.spawn(p.index, [&] { return run_point(sweep, p, summarize); });
    }
    auto [index, out] = pool.wait_one();
    done({index, out.kind == ChildOutcome::Kind::result, out.data});
  }
}

} // namespace memwall
