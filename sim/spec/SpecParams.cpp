#include "sim/spec/SpecParams.hpp"

#include "sim/spec/ExperimentSpec.hpp"

namespace memwall {

const std::vector<ParamDoc>& spec_param_docs()
{
  static const std::vector<ParamDoc> docs = [] {
    // Reading minimal specs records every parameter with its description and default;
    // inline node and GPU mappings bring in their schemas too.
    std::vector<ParamDoc> saved = param_docs();
    param_docs().clear();
    parse_spec("hardware: {node: {preset: dgx-a100}, gpu: {preset: a100-sxm4-80gb}}\nmodel: {preset: gpt2}\n"
               "training: {}\n",
               "(defaults)", "");
    parse_spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nmodel: {preset: gpt2}\ninference: {poisson: {}}\n",
               "(defaults)", "");
    parse_spec("hardware: {node: dgx-a100, gpus_per_node: 1}\nworkload: {trace: rank0.json.gz}\n", "(defaults)", "");
    std::vector<ParamDoc> out;
    for (const auto& d : param_docs())
      for (const char* section : {"hardware", "model", "training", "inference", "memory", "workload"})
        if (d.path.rfind(section, 0) == 0)
          out.push_back(d);
    param_docs() = std::move(saved);
    return out;
  }();
  return docs;
}

bool is_spec_key(const std::string& key)
{
  for (const auto& d : spec_param_docs())
    if (d.path == key || d.path.rfind(key + ".", 0) == 0)
      return true;
  return false;
}

} // namespace memwall
