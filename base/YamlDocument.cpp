#include "base/YamlDocument.hpp"

#include "base/InputError.hpp"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>

#include <sstream>
#include <unordered_map>
#include <vector>

namespace memwall {
namespace {

std::string at_line(const std::string& file, const YAML::Mark& m) { return file + ":" + std::to_string(m.line + 1); }

// Counts the nodes of the document as its aliases expand, from the parser's events,
// before yaml-cpp builds the tree (whose walks would loop or take hours).
class AliasCheck : public YAML::EventHandler {
public:
  explicit AliasCheck(std::string file) : file_(std::move(file)) {}

  void OnDocumentStart(const YAML::Mark& m) override { start_ = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t a) override { leaf(m, a); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t a, const std::string&) override { leaf(m, a); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override
  {
    open(m, a);
  }
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t a, YAML::EmitterStyle::value) override
  {
    open(m, a);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapEnd() override { close(); }
  void OnAnchor(const YAML::Mark&, const std::string& name) override { names_.push_back(name); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t a) override
  {
    auto it = sizes_.find(a);
    if (it == sizes_.end()) // named but not yet complete: the alias is inside its node
      throw InputError(at_line(file_, m) + ": YAML alias *" + name(a) +
                       " refers to a node that contains it (a loop); memwall reads trees, write the value out");
    aliased_ = true;
    count(m, it->second);
  }

  const YAML::Mark& start() const { return start_; }

private:
  void leaf(const YAML::Mark& m, YAML::anchor_t a)
  {
    count(m, 1);
    if (a)
      sizes_[a] = 1;
  }
  void open(const YAML::Mark& m, YAML::anchor_t a)
  {
    count(m, 1);
    open_.push_back({a, nodes_ - 1});
  }
  void close()
  {
    if (open_.empty())
      return;
    if (open_.back().anchor)
      sizes_[open_.back().anchor] = nodes_ - open_.back().first;
    open_.pop_back();
  }
  void count(const YAML::Mark& m, size_t n)
  {
    nodes_ += n;
    if (aliased_ && nodes_ > yaml_expanded_nodes_limit)
      throw InputError(at_line(file_, m) + ": YAML aliases expand the document past " +
                       std::to_string(yaml_expanded_nodes_limit) + " nodes; write the values out");
  }
  std::string name(YAML::anchor_t a) const { return a >= 1 && a <= names_.size() ? names_[a - 1] : "?"; }

  struct Open {
    YAML::anchor_t anchor;
    size_t first; // nodes_ when it opened
  };
  std::string file_;
  YAML::Mark start_;
  std::vector<Open> open_;
  std::vector<std::string> names_;                   // anchor k is names_[k - 1]
  std::unordered_map<YAML::anchor_t, size_t> sizes_; // expanded nodes of each complete anchor
  size_t nodes_ = 0;
  bool aliased_ = false;
};

// yaml-cpp keeps every duplicate key and lookups find the first: a second `training:`
// section was silently ignored. The walk is bounded: the parser bounds nesting, and
// AliasCheck loops and expansion.
void refuse_duplicate_keys(const YAML::Node& n, const std::string& file)
{
  if (n.IsMap()) {
    std::unordered_map<std::string, int> seen;
    for (const auto& kv : n) {
      if (kv.first.IsScalar()) {
        auto [it, fresh] = seen.emplace(kv.first.Scalar(), kv.first.Mark().line);
        if (!fresh)
          throw InputError(at_line(file, kv.first.Mark()) + ": duplicate key '" + kv.first.Scalar() +
                           "' (first given on line " + std::to_string(it->second + 1) + ")");
      }
      refuse_duplicate_keys(kv.second, file);
    }
  } else if (n.IsSequence()) {
    for (const auto& item : n)
      refuse_duplicate_keys(item, file);
  }
}

} // namespace

YAML::Node parse_yaml(const std::string& text, const std::string& file)
{
  YAML::Node root;
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    AliasCheck check(file);
    if (parser.HandleNextDocument(check) && parser.HandleNextDocument(check))
      throw InputError(at_line(file, check.start()) +
                       ": a second YAML document (after '---'); memwall reads one document per file");
    root = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(at_line(file, e.mark) + ": malformed YAML: nested deeper than " + std::to_string(e.depth() - 1) +
                     " levels");
  } catch (const YAML::ParserException& e) {
    throw InputError(at_line(file, e.mark) + ": malformed YAML: " + e.msg);
  }
  refuse_duplicate_keys(root, file);
  return root;
}

} // namespace memwall
