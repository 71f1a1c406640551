#pragma once
// A JSON subtree kept whole while a SAX parser streams past it (a Kineto trace's
// args.memwall and its top-level "memwall"; the rest of a trace is never held): the open
// containers along the path, innermost last. A parent is appended to only once its open
// child is closed, so the pointers stay valid. What is refused (a key given twice, too
// deep a nesting) is reported to the caller, which knows where in the file it is.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace memwall {

class JsonSubtree {
public:
  bool active() const { return !open_.empty(); }
  // Opens an object or array: the subtree's root when none is open. False, and nothing
  // opened, when json_max_depth containers are open already (copying and dumping a value
  // recurse: a record nested 100,000 deep overflowed the stack once read).
  bool open(nlohmann::json container);
  // Names the open object's next value; false when the object holds that key already.
  bool key(const std::string& k);
  void value(nlohmann::json v);
  // Closes the innermost container; true when it was the root, which take() hands over.
  bool close();
  nlohmann::json take() { return std::move(root_); }

private:
  std::vector<nlohmann::json*> open_;
  nlohmann::json root_;
  std::string key_;
};

} // namespace memwall
