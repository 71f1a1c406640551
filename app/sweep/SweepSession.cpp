#include "app/sweep/SweepSession.hpp"

#include "app/sweep/SweepProgress.hpp"
#include "base/ChildPool.hpp"

#include <malloc.h>

#include <chrono>
#include <csignal>
#include <iostream>

namespace memwall {
namespace {

volatile std::sig_atomic_t interrupted = 0;

} // namespace

std::map<int64_t, SweepRow> rows_to_resume(const std::string& out_path, const SweepSpec& sweep, SweepFileInfo& info)
{
  std::map<int64_t, SweepRow> rows = read_sweep_rows(out_path, sweep, info);
  std::erase_if(rows, [](const auto& r) { return r.second.error.rfind(worker_died_prefix, 0) == 0; });
  return rows;
}

bool run_sweep_points(const std::string& out_path, const SweepSpec& sweep, std::map<int64_t, SweepRow>& rows,
                      SweepFileInfo& info, int jobs, const MpiWorld& world)
{
  std::vector<int64_t> todo;
  for (const SweepPoint& p : sweep.points)
    if (!rows.count(p.index))
      todo.push_back(p.index);

  // Children get the signal too and their points are not recorded, so --resume runs
  // them again.
  interrupted = 0;
  std::signal(SIGINT, [](int) { interrupted = 1; });
  std::signal(SIGTERM, [](int) { interrupted = 1; });

  // HDF5 allocates and frees megabytes per file write; keep them in the heap so that
  // rewriting the file after every point does not fault fresh pages in each time.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  SweepProgress progress(sweep.points.size(), rows.size(), std::cerr);
  using clock       = std::chrono::steady_clock;
  auto last_write   = clock::now();
  double write_cost = 0;
  auto write        = [&] {
    auto t0 = clock::now();
    write_sweep_file(out_path, sweep, rows, info);
    last_write = clock::now();
    write_cost = std::chrono::duration<double>(last_write - t0).count();
  };
  write(); // the file exists from the start, and the first write measures its cost
  auto done = [&](const PointOutcome& o) {
    SweepRow row;
    row.error = o.ok ? "" : o.data;
    if (o.ok) {
      try {
        row = row_from_payload(o.index, o.data);
      } catch (const std::exception& e) {
        row.error = std::string("unreadable results from the point's process: ") + e.what();
      }
    }
    row.index     = o.index;
    rows[o.index] = std::move(row);
    progress.point_done(!o.ok);
    // Every finished point reaches the file, unless points finish faster than the
    // file is written (about 15 ms, more with recorded timelines): then the writer
    // keeps at most half a core busy.
    double since = std::chrono::duration<double>(clock::now() - last_write).count();
    if (since >= write_cost)
      write();
  };
  bool finished = true;
  if (world.size() > 1) {
    finished = world.coordinate_points(todo, done, [] { return interrupted != 0; });
  } else {
    struct Stop {};
    try {
      run_points(sweep, todo, jobs, summarize_point, [&](const PointOutcome& o) {
        if (interrupted)
          throw Stop{};
        done(o);
      });
    } catch (const Stop&) {
      finished = false;
    }
  }
  if (finished)
    info.finished_at = timestamp_now();
  write();
  progress.finish();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  return finished;
}

} // namespace memwall
