#include "app/sweep/SweepProgress.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace memwall {
namespace {

std::string duration_text(double s)
{
  char buf[32];
  long t = static_cast<long>(s + 0.5);
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  else if (t >= 60)
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else
    std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

} // namespace

SweepProgress::SweepProgress(size_t total, size_t already_done, std::ostream& out)
    : total_(total), done_(already_done), out_(out), terminal_(::isatty(STDERR_FILENO) != 0),
      start_(std::chrono::steady_clock::now())
{
  if (already_done > 0)
    out_ << "memwall sweep: resuming, " << already_done << " of " << total << " points already done\n";
  if (terminal_)
    draw();
}

void SweepProgress::point_done(bool failed)
{
  ++done_;
  ++ran_;
  failed_ += failed ? 1 : 0;
  draw();
}

void SweepProgress::draw()
{
  double elapsed  = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::string eta = ran_ > 0 && done_ < total_
                        ? duration_text(elapsed / static_cast<double>(ran_) * static_cast<double>(total_ - done_))
                        : "-";
  char line[160];
  if (terminal_) {
    const int width = 30;
    int filled      = total_ ? static_cast<int>(width * done_ / total_) : width;
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(width, '.');
    std::snprintf(line, sizeof line, "\r[%s] %zu/%zu points, %zu failed, ETA %s   ", bar.c_str(), done_, total_,
                  failed_, eta.c_str());
    out_ << line << std::flush;
  } else if (ran_ > 0) {
    std::snprintf(line, sizeof line, "point %zu/%zu done, %zu failed, ETA %s\n", done_, total_, failed_, eta.c_str());
    out_ << line << std::flush;
  }
}

void SweepProgress::finish()
{
  if (terminal_)
    out_ << "\n";
}

} // namespace memwall
