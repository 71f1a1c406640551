#pragma once
// Name -> implementation table of one swappable concern (collective algorithm, pipeline
// schedule, KV manager, batch scheduler), as Ramulator 2 keeps them: implementations in
// an impl/ folder add themselves from static initializers, a spec key picks one by name,
// and `memwall list` prints every entry with its description and keys.
//
// An implementation reads its own keys (Ramulator 2's param<T>("x"), SST's documented
// parameters): its factory's first argument is the ParamReader of the section they live
// in, which make() hands over owned by the implementation, so `memwall list params` names
// the owner of every key. Such a registry (its section named) makes an entry with its
// defaults, every other argument of the factory default-constructed, to say which keys
// it reads without a spec, and so lists them all and refuses, with the owner named, a
// key that belongs to an entry the spec did not pick.
#include "base/Implementation.hpp"
#include "base/ParamReader.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace memwall {

// Whether a factory reads keys (its first argument a ParamReader), and the call that
// makes an entry with its defaults: the reader given, every other argument as its
// type's default (an engine's EngineDefaults{}, ...).
template <typename Factory>
struct FactoryReadsKeys {
  static constexpr bool value = false;
};
template <typename Made, typename... Context>
struct FactoryReadsKeys<std::function<Made(ParamReader&, Context...)>> {
  static constexpr bool value = true;
  static Made call_with_defaults(const std::function<Made(ParamReader&, Context...)>& make, ParamReader& r)
  {
    return make(r, std::remove_cvref_t<Context>{}...);
  }
};

template <typename Factory>
class Registry {
public:
  struct Entry {
    std::string description;
    Factory make;
  };
  // `what` ("KV manager"), `key` ("inference.kv_manager") and `list` ("kv-managers")
  // name the concern in the error for an unknown name; `default_name` is the entry a
  // spec that names none gets ("" where the key is required or the default is derived);
  // `section` the spec's section the implementations read their keys from ("training").
  Registry(std::string what, std::string key, std::string list, std::string default_name = "", std::string section = "")
      : what_(std::move(what)), key_(std::move(key)), list_(std::move(list)), default_name_(std::move(default_name)),
        section_(std::move(section))
  {}

  bool add(const std::string& name, const std::string& description, Factory make)
  {
    entries_[name] = {description, std::move(make)};
    return true;
  }

  // Takes an entry out again (a test's own implementation, registered for its length).
  void remove(const std::string& name) { entries_.erase(name); }

  // The factory called `name`; an unknown name is an InputError.
  const Factory& get(const std::string& name) const
  {
    auto it = entries_.find(name);
    if (it == entries_.end())
      throw_unknown_preset(what_, name, names(), key_, list_);
    return it->second.make;
  }

  // Builds the implementation called `name`; an unknown name is an InputError. A
  // ParamReader as the first argument reaches the factory owned by the implementation.
  template <typename First, typename... Args>
  auto make(const std::string& name, First&& first, Args&&... args) const
  {
    if constexpr (std::is_same_v<std::decay_t<First>, ParamReader>) {
      ParamReader own = first.owned_by(owner(name));
      return named(get(name)(own, std::forward<Args>(args)...), name);
    } else {
      return named(get(name)(std::forward<First>(first), std::forward<Args>(args)...), name);
    }
  }
  auto make(const std::string& name) const { return named(get(name)(), name); }

  // `name` (the default entry when empty) as a spec that gives none of its keys gets it
  // (an entry named on the command line).
  template <typename... Args>
  auto make_with_defaults(const std::string& name, Args&&... args) const
  {
    ParamReader none(YAML::Node(), "(defaults)", section_);
    return make(name.empty() ? default_name_ : name, none, std::forward<Args>(args)...);
  }

  // The owner of the keys `name` reads, as `memwall list params` says it.
  std::string owner(const std::string& name) const { return what_ + " " + name; }

  const std::string& section() const { return section_; }
  // Makes `name` with its defaults (documenting its keys); the keys it reads, in order
  // (none for a concern whose implementations read no keys).
  std::vector<std::string> describe(const std::string& name) const
  {
    if constexpr (!FactoryReadsKeys<Factory>::value) {
      return {};
    } else {
      ParamReader probe = ParamReader(YAML::Node(), "(defaults)", section_).owned_by(owner(name));
      FactoryReadsKeys<Factory>::call_with_defaults(get(name), probe);
      return probe.known();
    }
  }

  // After the section read every key (`chosen` its own): refuses a key of r's mapping
  // that another entry reads and nothing here did ("training.deepspeed: read by training
  // stack deepspeed; this spec runs training stack pytorch"). One given as null is
  // absent, as everywhere: let through.
  void refuse_others_keys(const std::string& chosen, ParamReader& r) const
  {
    for (const auto& [name, entry] : entries_) {
      if (name == chosen)
        continue;
      for (const std::string& k : describe(name)) {
        const auto& read = r.known();
        if (!r.given(k) || std::find(read.begin(), read.end(), k) != read.end())
          continue;
        if (!r.has(k))
          r.skip(k);
        else
          r.fail(k, "read by " + owner(name) + "; this spec runs " + owner(chosen) + " (" + key_ + ")");
      }
    }
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
  const std::string& default_name() const { return default_name_; }

private:
  template <typename Made>
  static Made named(Made made, const std::string& name)
  {
    if constexpr (requires { made->name(); }) {
      using Object = std::remove_cvref_t<decltype(*made)>;
      if constexpr (std::is_base_of_v<Implementation, Object>)
        static_cast<Implementation&>(const_cast<std::remove_const_t<Object>&>(*made)).name_ = name;
    }
    return made;
  }

  std::string what_, key_, list_, default_name_, section_;
  std::map<std::string, Entry> entries_;
};

} // namespace memwall
