#pragma once
// Progress of a sweep on stderr: a bar redrawn in place on a terminal, one plain line
// per point otherwise (logs, CI).
#include <chrono>
#include <cstddef>
#include <ostream>

namespace memwall {

class SweepProgress {
public:
  SweepProgress(size_t total, size_t already_done, std::ostream& out);
  void point_done(bool failed);
  void finish();

private:
  void draw();

  size_t total_, done_, failed_ = 0, ran_ = 0;
  std::ostream& out_;
  bool terminal_;
  std::chrono::steady_clock::time_point start_;
};

} // namespace memwall
