#pragma once
// What every implementation of a swappable concern (a stack, an engine, a schedule, ...)
// knows of itself: the name its registry made it by. Code that needs a concern holds the
// configured object and asks it (gem5's typed parameters holding objects); the name is
// for what a person reads (summaries, `memwall list`), never for deciding what to do.
#include <string>

namespace memwall {

template <typename Factory>
class Registry;

class Implementation {
public:
  virtual ~Implementation() = default;
  const std::string& name() const { return name_; }

private:
  template <typename Factory>
  friend class Registry;
  std::string name_;
};

} // namespace memwall
