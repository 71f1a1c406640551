#pragma once
// The catalog YAML files, embedded by CMake (see CatalogText.cpp.in).
namespace memwall {
extern const char* const catalog_gpus_yaml;
extern const char* const catalog_nodes_yaml;
} // namespace memwall
