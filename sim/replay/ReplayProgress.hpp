#pragma once
// A progress line on stderr for long single runs (the 1T example, a 100k-request trace:
// minutes of silence otherwise): ops replayed, simulated time, and an estimate of the
// time left. Only when stderr is a terminal, redrawn at most twice a second, erased at
// the end, so logs and pipes never see it.
#include <chrono>
#include <cstddef>

namespace memwall {

class ReplayProgress {
public:
  explicit ReplayProgress(bool wanted);
  ~ReplayProgress(); // erases the line
  ReplayProgress(const ReplayProgress&)            = delete;
  ReplayProgress& operator=(const ReplayProgress&) = delete;

  // After each completed op: `total` is the ops known so far (a serving run grows).
  void op_done(size_t completed, size_t total, double simulated_s)
  {
    if (on_ && (++calls_ & 4095) == 0)
      draw(completed, total, simulated_s);
  }

private:
  void draw(size_t completed, size_t total, double simulated_s);

  int fd_            = 2; // the terminal, even while SimGrid's stderr is captured
  bool on_           = false;
  bool drawn_        = false;
  size_t calls_      = 0;
  double interval_s_ = 0.5;
  std::chrono::steady_clock::time_point start_, last_;
};

} // namespace memwall
