#pragma once
// Name -> implementation table of one swappable concern (collective algorithm, pipeline
// schedule, KV manager, batch scheduler), as Ramulator 2 keeps them: implementations in
// an impl/ folder add themselves from static initializers, a spec key picks one by name,
// and `memwall list` prints every entry with its description.
#include "base/ParamReader.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace memwall {

template <typename Factory>
class Registry {
public:
  struct Entry {
    std::string description;
    Factory make;
  };

  // `what` ("KV manager"), `key` ("inference.kv_manager") and `list` ("kv-managers")
  // name the concern in the error for an unknown name.
  Registry(std::string what, std::string key, std::string list)
      : what_(std::move(what)), key_(std::move(key)), list_(std::move(list))
  {}

  bool add(const std::string& name, const std::string& description, Factory make)
  {
    entries_[name] = {description, std::move(make)};
    return true;
  }

  // The factory called `name`; an unknown name is an InputError.
  const Factory& get(const std::string& name) const
  {
    auto it = entries_.find(name);
    if (it == entries_.end())
      throw_unknown_preset(what_, name, names(), key_, list_);
    return it->second.make;
  }

  // Builds the implementation called `name`; an unknown name is an InputError.
  template <typename... Args>
  auto make(const std::string& name, Args&&... args) const
  {
    return get(name)(std::forward<Args>(args)...);
  }

  std::vector<std::string> names() const
  {
    std::vector<std::string> out;
    for (const auto& [name, entry] : entries_)
      out.push_back(name);
    return out;
  }

  const std::map<std::string, Entry>& entries() const { return entries_; }
  // What the concern is ("KV manager"), the key that picks one ("inference.kv_manager")
  // and its `memwall list` subject ("kv-managers").
  const std::string& what() const { return what_; }
  const std::string& key() const { return key_; }
  const std::string& list_subject() const { return list_; }

private:
  std::string what_, key_, list_;
  std::map<std::string, Entry> entries_;
};

} // namespace memwall
