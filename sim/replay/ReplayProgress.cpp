#include "sim/replay/ReplayProgress.hpp"

#include "base/Quantity.hpp"
#include "base/StderrCapture.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace memwall {

ReplayProgress::ReplayProgress(bool wanted)
    : fd_(StderrCapture::real_stderr()), on_(wanted && ::isatty(fd_)), start_(std::chrono::steady_clock::now()),
      last_(start_)
{
  // MEMWALL_PROGRESS_INTERVAL_S (default 0.5): how often the line is redrawn; tests set
  // 0 so that a short run draws it too.
  if (const char* s = std::getenv("MEMWALL_PROGRESS_INTERVAL_S"))
    interval_s_ = std::max(0.0, std::atof(s));
}

ReplayProgress::~ReplayProgress()
{
  if (drawn_)
    ::dprintf(fd_, "\r\033[K");
}

void ReplayProgress::draw(size_t completed, size_t total, double simulated_s)
{
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_s_)
    return;
  last_          = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  double left = completed > 0 && total > completed ? elapsed * static_cast<double>(total - completed) / completed : 0;
  ::dprintf(fd_, "\r\033[K  replay: %s of %s ops (%.0f %%), simulated %s, about %s left",
            format_si(completed, "").c_str(), format_si(total, "").c_str(), total ? 100.0 * completed / total : 0.0,
            format_duration(simulated_s).c_str(), format_duration(left).c_str());
  drawn_ = true;
}

} // namespace memwall
