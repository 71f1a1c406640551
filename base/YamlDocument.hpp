#pragma once
// YAML text from the user (specs, sweeps, profiles, --set values) as one document whose
// every node can be walked safely. yaml-cpp builds aliases as shared nodes: an alias to
// the node that holds it (`a: &a [*a]`) is a loop every walk follows for ever, and
// aliases of aliases multiply (623 bytes expanded to billions of nodes). It keeps a key
// given twice (lookups find the first), and reads only the first of several documents.
// All of those are refused here, before any reader sees the tree.
#include <yaml-cpp/yaml.h>

#include <string>

namespace memwall {

// Nodes a document may have once its aliases are expanded (a document without aliases
// has no limit beyond its size).
inline constexpr size_t yaml_expanded_nodes_limit = 1'000'000;

// The YAML document in `text`; InputError naming `file` and the line for a syntax error,
// nesting too deep, an alias loop, aliases expanding past yaml_expanded_nodes_limit, a
// duplicate key, or a second document.
YAML::Node parse_yaml(const std::string& text, const std::string& file);

} // namespace memwall
