#pragma once
// The catalog YAML files, embedded by CMake (see CatalogText.cpp.in).
#include <map>
#include <string>
namespace memwall {
extern const char* const catalog_gpus_yaml;
extern const char* const catalog_nodes_yaml;
// Fitted profiles shipped in catalog/profiles/<gpu id>.yaml, by GPU id.
const std::map<std::string, const char*>& catalog_profiles();
} // namespace memwall
