#pragma once
// The keys of each JSON object open along a SAX parser's path, by depth, so that a key
// given twice in one object is seen (nlohmann's SAX passes both; a reader keeping fields
// as they come would silently read the first or the last). An object holds few keys, so
// each is a short list searched in order; lists are reused, not reallocated, per object.
#include <algorithm>
#include <string>
#include <vector>

namespace memwall {

class ObjectKeys {
public:
  // An object opens at `depth`: its list starts empty.
  void open(int depth)
  {
    if (seen_.size() <= static_cast<size_t>(depth))
      seen_.resize(static_cast<size_t>(depth) + 1);
    seen_[static_cast<size_t>(depth)].clear();
  }
  // Key `k` of the object open at `depth`; false when that object gave it already.
  bool add(int depth, const std::string& k)
  {
    if (static_cast<size_t>(depth) >= seen_.size())
      return true; // not an object this reader opened
    auto& keys = seen_[static_cast<size_t>(depth)];
    if (std::find(keys.begin(), keys.end(), k) != keys.end())
      return false;
    keys.push_back(k);
    return true;
  }

private:
  std::vector<std::vector<std::string>> seen_;
};

} // namespace memwall
