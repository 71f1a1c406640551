#pragma once
// Work run in forked children, several at once. SimGrid allows one Engine per process
// (DESIGN.md §3), so every replay after the first, and every point of a sweep, runs in
// a child of a process that never started one. A child returns bytes through a pipe;
// the parent reads all pipes as they fill, so large results never block a child.
#include <cstdint>
#include <functional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace memwall {

// How the error of a child that died (a signal, or exiting without a result) begins:
// such a point is not its spec's fault (killed, out of memory) and --resume runs it
// again.
inline constexpr const char* worker_died_prefix = "the worker process died";

struct ChildOutcome {
  enum class Kind { result, input_error, failure } kind = Kind::failure;
  std::string data; // the result, or the error message
};

class ChildPool {
public:
  explicit ChildPool(int max_children);
  ~ChildPool(); // kills children still running
  ChildPool(const ChildPool&)            = delete;
  ChildPool& operator=(const ChildPool&) = delete;

  bool full() const { return static_cast<int>(children_.size()) >= max_; }
  size_t running() const { return children_.size(); }
  // Runs `work` in a new child; an InputError it throws comes back as input_error,
  // any other exception (or the child dying) as failure.
  void spawn(int64_t tag, const std::function<std::string()>& work);
  // Blocks until one child has finished; returns its tag and outcome.
  std::pair<int64_t, ChildOutcome> wait_one();

private:
  struct Child {
    int64_t tag = 0;
    pid_t pid   = -1;
    int fd      = -1;
    std::string data;
  };
  ChildOutcome finish(Child& c);

  int max_;
  std::vector<Child> children_;
};

// One unit of work in one child, waited for.
ChildOutcome run_in_child(const std::function<std::string()>& work);

// Runs work(0) .. work(count - 1), each in its own child, up to `jobs` at once, and
// calls done(i, outcome) in this process as each one finishes (in finishing order).
void run_in_children(size_t count, int jobs, const std::function<std::string(size_t)>& work,
                     const std::function<void(size_t, const ChildOutcome&)>& done);

} // namespace memwall
