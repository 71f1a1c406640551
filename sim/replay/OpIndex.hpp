#pragma once
// The ops the replay has taken from the DAG and what waits on what (Replayer.cpp:
// take_new_ops).
#include "workloads/dag/Op.hpp"
#include "workloads/dag/OpDag.hpp"

#include <cstdint>
#include <vector>

namespace memwall {

struct OpIndex {
  // Takes ops [taken, n): their successors and dependencies inside the batch, from the
  // DAG's edges added since the last batch.
  void index_batch(const std::vector<DagEdge>& edges, size_t n);

  // Per op the DAG still holds (op id - base):
  std::vector<uint32_t> waiting_on;   // unfinished dependencies
  std::vector<uint32_t> running_acts; // unfinished activities of a started op
  // The last batch of ops taken, [batch, taken) (index_batch): each op's successors
  // out[out_start[v - batch] ..], and its dependencies inside the batch.
  OpId batch = 0;
  std::vector<uint32_t> out_start, in_count;
  std::vector<OpId> out;
  size_t edges_taken = 0;
  size_t taken       = 0;
  OpId base          = 0; // the DAG's first_id() when ops were last taken
  std::vector<OpId> ready;
};

} // namespace memwall
