// Where FlexGen puts a decoder layer's weights for a percent policy.
#pragma once

#include "workloads/inference/config/InferenceConfig.hpp"
#include "workloads/model/ModelSpec.hpp"

namespace memwall {

// FlexGen (flex_opt.py, init_weight_list) does not split tensors: each weight tensor of
// one of its layers goes whole to the device in whose band its midpoint falls, the bands
// laid out over the layer's cumulative size as disk, then CPU, then GPU. An OPT decoder
// layer is two FlexGen layers: the attention block (q, k, v, out projections with their
// biases, then the norm) and the MLP (fc1, fc2 with biases, then the norm). So "20 % on
// the GPU" keeps only the output projection and the norms there: 8.3 % of OPT-30B's
// layer bytes. Returns the parts off the GPU, by bytes, that this leaves in host memory
// and on NVMe; the percentages are FlexGen's --percent for host memory and disk (the GPU
// takes the rest).
OffShares flexgen_weight_placement(const ModelSpec& m, double cpu_pct, double disk_pct);

} // namespace memwall
