#pragma once
// Strict reading of one YAML mapping of a spec or catalog file.
//
// Every key is read together with its description and default in one call, as
// Ramulator 2 and SST do, so that (a) `memwall list params` can print them all and
// (b) a key nobody read is a typo: finish() turns it into an InputError naming the
// file, the line, the key and the keys that are allowed there.
#include "base/InputError.hpp"
#include "base/Quantity.hpp"

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace memwall {

struct ParamDoc {
  std::string path;         // "training.micro_batch"
  std::string type;         // "integer", "bytes", "one of: adam, sgd", ...
  std::string default_text; // "" when required
  std::string description;
  // The implementations that read it ("training stack deepspeed"), comma-separated; ""
  // for a key of the section itself.
  std::string owner;
  bool read_by(const std::string& implementation) const
  {
    return (", " + owner + ",").find(", " + implementation + ",") != std::string::npos;
  }
};

// Every parameter read so far in this process, in first-read order without duplicates.
std::vector<ParamDoc>& param_docs();

class ParamReader {
public:
  // `node` must be a mapping (or null: then every key takes its default).
  // `overridden`: the keys given with --set (full dotted paths); errors about them
  // name the --set argument instead of a line of the file.
  ParamReader(YAML::Node node, std::string file, std::string path,
              std::shared_ptr<const std::vector<std::string>> overridden = nullptr);
  // A reader of `node` as the mapping at `key` under this one (same file, same --set keys,
  // same owner).
  ParamReader nested(YAML::Node node, const std::string& key) const;
  // The same mapping read on behalf of an implementation (Registry::make): the keys it
  // reads are documented as its own, and count as read for finish() of this reader.
  ParamReader owned_by(const std::string& owner) const;
  // The keys asked for so far (by this reader or one owned_by it), in first-read order.
  const std::vector<std::string>& known() const { return *known_; }

  // Values beyond [min, max] are refused with the range named.
  double number(const std::string& key, double def, const std::string& desc, double min = 0.0, double max = 1e15);
  double required_number(const std::string& key, const std::string& desc, double min = 0.0, double max = 1e15);
  // A non-negative quantity with an optional unit ("80 GB", "25 GB/s", "1 us"), 0 or
  // within quantity_limits(kind).
  double quantity(const std::string& key, QuantityKind kind, double def, const std::string& desc);
  double required_quantity(const std::string& key, QuantityKind kind, const std::string& desc);
  // `default_text` documents a default that is derived rather than fixed (then `def` is
  // only what an absent key reads as).
  // Values beyond [min, max] are refused with the range named; the default max keeps
  // every value inside an int.
  int64_t integer(const std::string& key, int64_t def, const std::string& desc, int64_t min = 0,
                  const std::string& default_text = "", int64_t max = default_integer_max);
  int64_t required_integer(const std::string& key, const std::string& desc, int64_t min = 0,
                           int64_t max = default_integer_max);
  static constexpr int64_t default_integer_max = 1'000'000'000;
  bool flag(const std::string& key, bool def, const std::string& desc);
  // A flag whose default depends on other keys (`default_text` says how): unset when absent.
  std::optional<bool> flag_or_unset(const std::string& key, const std::string& default_text, const std::string& desc);
  std::string choice(const std::string& key, const std::string& def, const std::vector<std::string>& allowed,
                     const std::string& desc);
  std::string text(const std::string& key, const std::string& def, const std::string& desc);
  std::string required_text(const std::string& key, const std::string& desc);

  bool has(const std::string& key) const;
  // Whether the mapping names `key` at all, an explicit null included.
  bool given(const std::string& key) const;
  // Counts `key` as read without reading it (a null another implementation's key holds:
  // absent, as has() reads it, so nothing to refuse).
  void skip(const std::string& key);
  // Marks key as known and returns its node (possibly undefined) for custom handling.
  YAML::Node take(const std::string& key, const std::string& type, const std::string& desc,
                  const std::string& default_text = "");
  // A nested mapping; a missing one reads as empty (documented as required when
  // `default_text` is "").
  ParamReader section(const std::string& key, const std::string& desc, const std::string& default_text = "empty");

  // Throws InputError if the mapping holds a key that no call above asked for.
  void finish() const;

  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  std::string location(const std::string& key) const; // "file:line: path.key"
  const std::string& file() const { return file_; }
  // The defaults of this mapping's keys are a preset's values (an inline GPU or node
  // that starts from one): `memwall list params` says so instead of one preset's number.
  void defaults_from_preset() { defaults_from_preset_ = true; }
  const std::string& path() const { return path_; }

private:
  YAML::Node get(const std::string& key, const std::string& type, const std::string& def, const std::string& desc);
  YAML::Node lookup(const std::string& key) const;
  void require(const std::string& key, const std::string& type, const std::string& desc);
  std::string scalar(const std::string& key, const YAML::Node& n, const std::string& expected) const;
  std::string full(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  // "file: --set a.b" when full_key (or a mapping above it) came from --set, else "".
  std::string set_location(const std::string& full_key) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::shared_ptr<std::vector<std::string>> known_ = std::make_shared<std::vector<std::string>>();
  std::string owner_;
  std::shared_ptr<const std::vector<std::string>> overridden_;
  bool defaults_from_preset_ = false;
};

// "a, b, c" (or joined by `separator`).
std::string join(const std::vector<std::string>& v, const std::string& separator = ", ");

// Closest names to `name` among `candidates` (edit distance), for "did you mean" hints.
std::vector<std::string> close_names(const std::string& name, const std::vector<std::string>& candidates);

// "WHERE: unknown WHAT 'id'; did you mean a, b? (see `memwall list LIST`)"
[[noreturn]] void throw_unknown_preset(const std::string& what, const std::string& id,
                                       const std::vector<std::string>& ids, const std::string& where,
                                       const std::string& list);

} // namespace memwall
