#include "sim/platform/SimGridSettings.hpp"

#include <simgrid/s4u/Engine.hpp>

namespace sg4 = simgrid::s4u;

namespace memwall {

void configure_exact_simgrid()
{
  // Without these, LV08's corrections add 3 % to every transfer, cross-traffic slows
  // opposite flows by 5 % and TCP-gamma caps fast links (measured, DESIGN.md §3).
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::Engine::set_config("network/TCP-gamma:0");
  // The default lazy update of 3.32 lets a flow escape a link's bound once the latency
  // phase of a concurrent flow ends: two 1 GB copies over two 25 GB/s links sharing a
  // 400 GB/s DRAM link finished at 40 ms and 2.7 ms instead of 40 ms each (measured on
  // 3.32 with 1 us link latencies). Full update is exact.
  sg4::Engine::set_config("network/optim:Full");
}

} // namespace memwall
