#include "sim/replay/OpIndex.hpp"

namespace memwall {

// The adjacency of ops [taken, n) from the edges added since the last batch. Ops taken
// before have all completed: an edge from one of them holds nothing back. Each op's
// successors keep the order their edges were added in (the order ops become ready).
void OpIndex::index_batch(const std::vector<DagEdge>& edges, size_t n)
{
  batch        = static_cast<OpId>(taken);
  size_t count = n - taken;
  out_start.assign(count + 1, 0);
  in_count.assign(count, 0);
  auto inside = [&](const DagEdge& e) { return e.earlier >= taken && e.later >= taken; };
  for (size_t i = edges_taken; i < edges.size(); ++i)
    if (inside(edges[i])) {
      ++out_start[edges[i].earlier - batch + 1];
      ++in_count[edges[i].later - batch];
    }
  for (size_t v = 0; v < count; ++v)
    out_start[v + 1] += out_start[v];
  out.resize(out_start[count]);
  std::vector<uint32_t> cursor(out_start.begin(), out_start.end() - 1);
  for (size_t i = edges_taken; i < edges.size(); ++i)
    if (inside(edges[i]))
      out[cursor[edges[i].earlier - batch]++] = edges[i].later;
  edges_taken = edges.size();
}

} // namespace memwall
