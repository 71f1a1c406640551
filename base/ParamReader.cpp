#include "base/ParamReader.hpp"

#include "base/NumberFormat.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace memwall {
namespace {

size_t edit_distance(const std::string& a, const std::string& b)
{
  std::vector<size_t> prev(b.size() + 1);
  std::vector<size_t> cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

} // namespace

std::string join(const std::vector<std::string>& v, const std::string& separator)
{
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? separator : "") + v[i];
  return out;
}

std::vector<ParamDoc>& param_docs()
{
  static std::vector<ParamDoc> docs;
  return docs;
}

std::vector<std::string> close_names(const std::string& name, const std::vector<std::string>& candidates)
{
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    size_t d     = edit_distance(name, c);
    bool related = c.find(name) != std::string::npos || name.find(c) != std::string::npos;
    if (d <= std::max<size_t>(2, name.size() / 3) || related)
      scored.emplace_back(related ? std::min<size_t>(d, 1) : d, c);
  }
  std::stable_sort(scored.begin(), scored.end(), [](auto& x, auto& y) { return x.first < y.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i)
    out.push_back(scored[i].second);
  return out;
}

void throw_unknown_preset(const std::string& what, const std::string& id, const std::vector<std::string>& ids,
                          const std::string& where, const std::string& list)
{
  std::string msg = (where.empty() ? "" : where + ": ") + "unknown " + what + " '" + id + "'";
  auto close      = close_names(id, ids);
  if (!close.empty())
    msg += "; did you mean " + join(close) + "?";
  throw InputError(msg + " (see `memwall list " + list + "`)");
}

ParamReader::ParamReader(YAML::Node node, std::string file, std::string path,
                         std::shared_ptr<const std::vector<std::string>> overridden)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), overridden_(std::move(overridden))
{
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    // (an absent section is Undefined and reads as empty)
    int line = node_.Mark().line;
    throw InputError(file_ + (line >= 0 ? ":" + std::to_string(line + 1) : "") + ": " +
                     (path_.empty() ? "document" : path_) + ": expected a mapping of keys to values");
  }
}

ParamReader ParamReader::nested(YAML::Node node, const std::string& key) const
{
  ParamReader r(std::move(node), file_, full(key), overridden_);
  r.owner_ = owner_;
  return r;
}

ParamReader ParamReader::owned_by(const std::string& owner) const
{
  ParamReader r = *this; // shares known_: what the owner reads, this reader has read
  r.owner_      = owner;
  return r;
}

std::string ParamReader::set_location(const std::string& full_key) const
{
  if (overridden_)
    for (const std::string& o : *overridden_)
      if (full_key == o || full_key.compare(0, o.size() + 1, o + ".") == 0 ||
          full_key.compare(0, o.size() + 1, o + "[") == 0) // an item of a list given with --set
        return file_ + ": --set " + full_key;
  return "";
}

std::string ParamReader::location(const std::string& key) const
{
  if (std::string set = set_location(full(key)); !set.empty())
    return set;
  std::string where = file_;
  YAML::Node n      = lookup(key);
  int line          = n.IsDefined() ? n.Mark().line : -1;
  if (line < 0 && node_.IsDefined())
    line = node_.Mark().line;
  if (line >= 0)
    where += ":" + std::to_string(line + 1);
  return where + ": " + full(key);
}

void ParamReader::fail(const std::string& key, const std::string& message) const
{
  throw InputError(location(key) + ": " + message);
}

YAML::Node ParamReader::lookup(const std::string& key) const
{
  // A missing key and an explicit null both read as absent (the default applies).
  if (!node_.IsMap())
    return YAML::Node(YAML::NodeType::Undefined);
  const YAML::Node& map = node_;
  YAML::Node n          = map[key];
  if (!n.IsDefined() || n.IsNull())
    return YAML::Node(YAML::NodeType::Undefined);
  return n;
}

bool ParamReader::has(const std::string& key) const { return lookup(key).IsDefined(); }

bool ParamReader::given(const std::string& key) const
{
  if (!node_.IsMap())
    return false;
  const YAML::Node& map = node_;
  return map[key].IsDefined();
}

void ParamReader::skip(const std::string& key)
{
  if (std::find(known_->begin(), known_->end(), key) == known_->end())
    known_->push_back(key);
}

YAML::Node ParamReader::get(const std::string& key, const std::string& type, const std::string& def,
                            const std::string& desc)
{
  skip(key); // asked for: known, whether given or not
  auto& docs           = param_docs();
  std::string doc_path = full(key);
  auto doc             = std::find_if(docs.begin(), docs.end(), [&](const ParamDoc& d) { return d.path == doc_path; });
  if (doc == docs.end())
    docs.push_back({doc_path, type, defaults_from_preset_ && !def.empty() ? "the preset's" : def, desc, owner_});
  else if (!owner_.empty() && !doc->owner.empty() && !doc->read_by(owner_))
    doc->owner += ", " + owner_; // another implementation of the concern reads it too
  return lookup(key);
}

YAML::Node ParamReader::take(const std::string& key, const std::string& type, const std::string& desc,
                             const std::string& default_text)
{
  return get(key, type, default_text, desc);
}

std::string ParamReader::scalar(const std::string& key, const YAML::Node& n, const std::string& expected) const
{
  if (!n.IsScalar())
    fail(key, "expected " + expected + ", got a " + (n.IsMap() ? "mapping" : "list"));
  return n.Scalar();
}

void ParamReader::require(const std::string& key, const std::string& type, const std::string& desc)
{
  if (has(key))
    return;
  get(key, type, "", desc); // documented as required even when it is missing
  fail(key, "is required (" + desc + ")");
}

double ParamReader::number(const std::string& key, double def, const std::string& desc, double min, double max)
{
  YAML::Node n =
      get(key, "number in [" + format_number(min) + ", " + format_number(max) + "]", format_number(def), desc);
  if (!n.IsDefined())
    return def;
  std::string s = scalar(key, n, "a number");
  auto v        = parse_quantity(s, QuantityKind::plain);
  if (!v)
    fail(key, "expected a number, got '" + s + "'");
  if (*v < min || *v > max)
    fail(key, "must lie in [" + format_number(min) + ", " + format_number(max) + "], got " + s);
  return *v;
}

double ParamReader::required_number(const std::string& key, const std::string& desc, double min, double max)
{
  require(key, "number", desc);
  return number(key, 0.0, desc, min, max);
}

double ParamReader::quantity(const std::string& key, QuantityKind kind, double def, const std::string& desc)
{
  static const char* names[] = {"bytes (e.g. 80e9 or '80 GB')", "bytes/s (e.g. 25e9 or '200 Gb/s')",
                                "FLOP/s (e.g. 312e12 or '312 TFLOP/s')", "seconds (e.g. 2e-6 or '2 us')", "number"};
  std::string type           = names[static_cast<int>(kind)];
  // Documented in the units a person writes ("2 TB", "170 GB/s", "1 us"), not 2e+12.
  QuantityLimits lim = quantity_limits(kind);
  // Sizes defined in binary units (a 2 MiB chunk) read in them; the others in SI.
  bool binary       = kind == QuantityKind::bytes && def >= 1024 && std::fmod(def, 1024.0) == 0;
  std::string shown = def == 0 || kind == QuantityKind::plain ? format_number(def)
                      : kind == QuantityKind::seconds         ? format_duration(def)
                      : binary                                ? format_bytes(def)
                                                              : format_si(def, lim.unit);
  YAML::Node n      = get(key, type, shown, desc);
  if (!n.IsDefined())
    return def;
  std::string s = scalar(key, n, type);
  auto v        = parse_quantity(s, kind);
  if (!v)
    fail(key, "expected " + type + ", got '" + s + "'");
  if (*v < 0)
    fail(key, "must not be negative, got " + s);
  if (*v != 0 && (*v < lim.smallest_nonzero || *v > lim.largest))
    fail(key, "must be 0 or lie in [" + format_number(lim.smallest_nonzero) + ", " + format_number(lim.largest) + "] " +
                  lim.unit + ", got " + s);
  return *v;
}

double ParamReader::required_quantity(const std::string& key, QuantityKind kind, const std::string& desc)
{
  require(key, "quantity", desc);
  return quantity(key, kind, 0.0, desc);
}

int64_t ParamReader::integer(const std::string& key, int64_t def, const std::string& desc, int64_t min,
                             const std::string& default_text, int64_t max)
{
  YAML::Node n = get(key, "integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]",
                     default_text.empty() ? std::to_string(def) : default_text, desc);
  if (!n.IsDefined())
    return def;
  std::string s = scalar(key, n, "an integer");
  auto v        = parse_quantity(s, QuantityKind::plain);
  if (!v || std::floor(*v) != *v || std::fabs(*v) > 9e15)
    fail(key, "expected an integer, got '" + s + "'");
  if (*v < static_cast<double>(min) || *v > static_cast<double>(max))
    fail(key, "must lie in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + s);
  return static_cast<int64_t>(*v);
}

int64_t ParamReader::required_integer(const std::string& key, const std::string& desc, int64_t min, int64_t max)
{
  require(key, "integer", desc);
  return integer(key, 0, desc, min, "", max);
}

bool ParamReader::flag(const std::string& key, bool def, const std::string& desc)
{
  return flag_or_unset(key, def ? "true" : "false", desc).value_or(def);
}

std::optional<bool> ParamReader::flag_or_unset(const std::string& key, const std::string& default_text,
                                               const std::string& desc)
{
  YAML::Node n = get(key, "true or false", default_text, desc);
  if (!n.IsDefined())
    return std::nullopt;
  std::string s = scalar(key, n, "true or false");
  if (s == "true" || s == "on" || s == "yes")
    return true;
  if (s == "false" || s == "off" || s == "no")
    return false;
  fail(key, "expected true or false, got '" + s + "'");
}

std::string ParamReader::choice(const std::string& key, const std::string& def, const std::vector<std::string>& allowed,
                                const std::string& desc)
{
  YAML::Node n = get(key, "one of: " + join(allowed), def, desc);
  if (!n.IsDefined())
    return def;
  std::string s = scalar(key, n, "one of: " + join(allowed));
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end())
    fail(key, "'" + s + "' is not allowed; allowed: " + join(allowed));
  return s;
}

std::string ParamReader::text(const std::string& key, const std::string& def, const std::string& desc)
{
  YAML::Node n = get(key, "text", def, desc);
  if (!n.IsDefined())
    return def;
  return scalar(key, n, "text");
}

std::string ParamReader::required_text(const std::string& key, const std::string& desc)
{
  require(key, "text", desc);
  return text(key, "", desc);
}

ParamReader ParamReader::section(const std::string& key, const std::string& desc, const std::string& default_text)
{
  YAML::Node n = get(key, "mapping", default_text, desc);
  return nested(n, key);
}

void ParamReader::finish() const
{
  if (!node_.IsMap())
    return;
  for (const auto& kv : node_) {
    std::string key = kv.first.Scalar();
    if (std::find(known_->begin(), known_->end(), key) != known_->end())
      continue;
    int line          = kv.first.Mark().line;
    std::string where = set_location(full(key));
    if (where.empty())
      where = file_ + (line >= 0 ? ":" + std::to_string(line + 1) : "") + ": " + full(key);
    std::vector<std::string> sorted = *known_;
    std::sort(sorted.begin(), sorted.end());
    std::string hint;
    auto close = close_names(key, sorted);
    if (!close.empty())
      hint = " (did you mean " + close.front() + "?)";
    throw InputError(where + ": unknown key" + hint + "; allowed keys: " + join(sorted));
  }
}

} // namespace memwall
