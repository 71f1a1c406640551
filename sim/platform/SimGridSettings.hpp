#pragma once
// SimGrid's engine (simgrid::s4u::Engine, one per process) as memwall runs it: the network model's settings under which its
// fluid model is exact (DESIGN.md §3).

namespace memwall {

// Call once, after the Engine is created and before any zone is.
void configure_exact_simgrid();

} // namespace memwall
