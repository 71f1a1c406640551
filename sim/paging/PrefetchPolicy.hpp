#pragma once
// When the program migrates managed memory in bulk (cudaMemPrefetchAsync) instead of
// letting kernels fault it in (UnifiedMemoryConfig::prefetch). A bulk migration runs
// at the copy engine's rate with no fault handling. Implementations live in impl/.
#include "base/Registry.hpp"

#include <functional>
#include <memory>

namespace memwall {

class PrefetchPolicy {
public:
  virtual ~PrefetchPolicy() = default;
  // Migrate each managed tensor to the GPU when it is allocated.
  virtual bool at_alloc() const = 0;
  // Before a kernel runs, migrate what it touches; and while it runs, what the next
  // `kernels_ahead() - 1` kernels of its stream touch. 0: never.
  virtual int kernels_ahead() const = 0;
};

using PrefetchFactory = std::function<std::unique_ptr<PrefetchPolicy>()>;
Registry<PrefetchFactory>& prefetch_registry();

} // namespace memwall
