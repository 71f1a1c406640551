#include "sim/replay/DueMemory.hpp"

#include <algorithm>

namespace memwall {

void DueMemory::add_run(std::vector<Entry>&& entries)
{
  if (entries.empty())
    return;
  uint64_t seq = runs_++;
  // One list per pool (a run's ops mostly land in its own GPU's).
  auto other = std::stable_partition(entries.begin(), entries.end(),
                                     [&](const Entry& e) { return e.pool == entries.front().pool; });
  if (other != entries.end()) {
    std::vector<Entry> rest(other, entries.end());
    entries.erase(other, entries.end());
    while (!rest.empty()) {
      auto more =
          std::stable_partition(rest.begin(), rest.end(), [&](const Entry& e) { return e.pool == rest.front().pool; });
      add_list(std::vector<Entry>(rest.begin(), more), seq);
      rest.erase(rest.begin(), more);
    }
  }
  add_list(std::move(entries), seq);
}

void DueMemory::add_list(std::vector<Entry>&& entries, uint64_t seq)
{
  uint32_t list;
  if (free_lists_.empty()) {
    list = static_cast<uint32_t>(lists_.size());
    lists_.emplace_back();
  } else {
    list = free_lists_.back();
    free_lists_.pop_back();
  }
  List& l   = lists_[list];
  l.entries = std::move(entries);
  l.next    = 0;
  l.seq     = seq;
  heads_[l.entries.front().pool].push({l.entries.front().time, seq, list});
}

void DueMemory::apply(MemoryPool& pool, double now)
{
  auto it = heads_.find(&pool);
  if (it == heads_.end())
    return;
  auto& heads = it->second;
  while (!heads.empty() && heads.top().time <= now) {
    Head h = heads.top();
    heads.pop();
    // The list's entries go on in turn while they stay the earliest due.
    for (;;) {
      List& l       = lists_[h.list];
      const Entry e = l.entries[l.next++];
      apply_op(pool, *e.what, e.time);
      if (l.next == l.entries.size()) {
        l.entries.clear();
        free_lists_.push_back(h.list);
        break;
      }
      h.time = l.entries[l.next].time;
      if (h.time > now || (!heads.empty() && h > heads.top())) {
        heads.push(h);
        break;
      }
    }
  }
}

void DueMemory::apply_all(double now)
{
  for (auto& [pool, heads] : heads_)
    apply(*const_cast<MemoryPool*>(pool), now); // the map keys the pools it was handed
}

void DueMemory::apply_op(MemoryPool& pool, const Op& op, double now)
{
  if (op.kind == OpKind::alloc)
    pool.alloc(op.category, op.bytes, now, op.name, op.tensor);
  else
    pool.free(op.category, op.bytes, now, op.tensor);
}

} // namespace memwall
