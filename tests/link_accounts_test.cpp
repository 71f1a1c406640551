// LinkAccounts, the replay's link figures, on their own: numbers chosen so each busy
// time and byte count can be written down by hand.
#include "sim/replay/LinkAccounts.hpp"

#include <catch2/catch.hpp>

using memwall::LinkAccounts;

TEST_CASE("a_link_is_busy_while_any_flow_crosses_it_not_for_the_sum_of_their_times", "[links]")
{
  LinkAccounts a;
  const int shared = a.add_link(), own = a.add_link();
  // Flow 1 on the shared link over [0, 2] s, flow 2 on both over [1, 3] s.
  a.flow_started({shared}, 100, 0);
  a.flow_started({shared, own}, 50, 1);
  a.flow_ended({shared}, 2);
  a.flow_ended({shared, own}, 3);
  CHECK(a.busy(shared) == Approx(3.0)); // [0, 3], not 2 + 2
  CHECK(a.busy(own) == Approx(2.0));
  CHECK(a.bytes(shared) == Approx(150.0));
  CHECK(a.bytes(own) == Approx(50.0));
  // Idle over [3, 5], busy again over [5, 6]: the gap does not count.
  a.flow_started({shared}, 10, 5);
  a.flow_ended({shared}, 6);
  CHECK(a.busy(shared) == Approx(4.0));
}

TEST_CASE("figures_added_without_a_flow_count_beside_the_flows_figures", "[links]")
{
  // A kernel alone on its HBM, or a coalesced run's collective, adds what its flows would
  // have put on the link; it does not open or close a busy interval.
  LinkAccounts a;
  const int hbm = a.add_link();
  a.flow_started({hbm}, 1000, 10);
  a.add(hbm, 500, 0.25);
  a.flow_ended({hbm}, 11);
  CHECK(a.busy(hbm) == Approx(1.25));
  CHECK(a.bytes(hbm) == Approx(1500.0));
  REQUIRE(a.size() == 1);
  CHECK(a.all_bytes()[0] == Approx(1500.0));
}
