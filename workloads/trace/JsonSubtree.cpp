#include "workloads/trace/JsonSubtree.hpp"

#include "base/JsonInput.hpp"

namespace memwall {

bool JsonSubtree::open(nlohmann::json container)
{
  if (open_.size() >= static_cast<size_t>(json_max_depth))
    return false;
  if (open_.empty()) {
    root_ = std::move(container);
    open_.push_back(&root_);
    return true;
  }
  nlohmann::json& top = *open_.back();
  if (top.is_array()) {
    top.push_back(std::move(container));
    open_.push_back(&top.back());
  } else {
    nlohmann::json& child = top[key_];
    child                 = std::move(container);
    open_.push_back(&child);
  }
  return true;
}

bool JsonSubtree::key(const std::string& k)
{
  key_ = k;
  return !(open_.back()->is_object() && open_.back()->contains(k));
}

void JsonSubtree::value(nlohmann::json v)
{
  nlohmann::json& top = *open_.back();
  if (top.is_array())
    top.push_back(std::move(v));
  else
    top[key_] = std::move(v);
}

bool JsonSubtree::close()
{
  open_.pop_back();
  return open_.empty();
}

} // namespace memwall
