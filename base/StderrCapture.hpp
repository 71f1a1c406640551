#pragma once
// Holds back what is written to stderr (file descriptor 2) while the SimGrid engine
// runs. When an exception escapes a completion callback, SimGrid prints a stack trace
// per pending activity straight to stderr (16 of them for one std::bad_alloc), which
// breaks memwall's one-line error contract. The text is kept in memory and passed on
// when the replay ends normally, dropped when it ends by an exception (whose message
// the CLI prints as its one line). Sanitizer builds leave stderr alone: their reports
// must never be hidden.
namespace memwall {

class StderrCapture {
public:
  StderrCapture();
  ~StderrCapture(); // restores stderr; forwards the captured text unless dropped
  StderrCapture(const StderrCapture&)            = delete;
  StderrCapture& operator=(const StderrCapture&) = delete;
  void drop() { forward_ = false; }
  // The real stderr while a capture is active (for the progress line), else 2.
  static int real_stderr();

private:
  int saved_    = -1; // the real stderr
  int capture_  = -1; // an anonymous in-memory file
  bool forward_ = true;
};

} // namespace memwall
