#pragma once
// An ordered set of chunk ids with O(1) insert at the back, removal anywhere and
// move-to-back: the list both eviction policies keep.
#include <cstddef>
#include <list>
#include <vector>

namespace memwall {

class ChunkQueue {
public:
  void push_back(int chunk)
  {
    if (static_cast<size_t>(chunk) >= where_.size())
      where_.resize(static_cast<size_t>(chunk) + 1, order_.end());
    erase(chunk);
    where_[static_cast<size_t>(chunk)] = order_.insert(order_.end(), chunk);
  }
  void erase(int chunk)
  {
    if (static_cast<size_t>(chunk) >= where_.size() || where_[static_cast<size_t>(chunk)] == order_.end())
      return;
    order_.erase(where_[static_cast<size_t>(chunk)]);
    where_[static_cast<size_t>(chunk)] = order_.end();
  }
  bool contains(int chunk) const
  {
    return static_cast<size_t>(chunk) < where_.size() && where_[static_cast<size_t>(chunk)] != order_.end();
  }
  int front() const { return order_.empty() ? -1 : order_.front(); }

private:
  std::list<int> order_;
  std::vector<std::list<int>::iterator> where_;
};

} // namespace memwall
