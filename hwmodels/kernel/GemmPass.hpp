#pragma once
// Which GEMM of a linear layer Y = X W an op or a measurement is. The three GEMMs of one
// layer have the same FLOPs but run in different layouts: with PyTorch's row-major tensors
// the forward is cuBLAS's NT GEMM, the input gradient dX = dY W^T its NN and the weight
// gradient dW = X^T dY its TN, and cuBLAS picks other kernels for each (measured on an
// H100, the same llama2-7b qkv layer at 448 tokens: 74 us forward, 84 us input gradient,
// 77 us weight gradient; calibration/data/measured).
//
// A measured GEMM of pass P is written as the logical GEMM C[m x n] = A[m x k] B[k x n]
// of that pass, for a layer of `in` inputs and `out` outputs over `tokens` rows:
//   forward      m = tokens, n = out, k = in
//   input_grad   m = tokens, n = in,  k = out
//   weight_grad  m = out,    n = in,  k = tokens
// so the token count is m, except for the weight gradient, where it is the contracted k.
#include <cstdint>
#include <optional>
#include <string>

namespace memwall {

// backward: an op that stands for both gradient GEMMs of its forward shape.
enum class GemmPass : uint8_t { forward, input_grad, weight_grad, backward };

inline const char* gemm_pass_name(GemmPass p)
{
  switch (p) {
    case GemmPass::forward: return "fwd";
    case GemmPass::input_grad: return "dgrad";
    case GemmPass::weight_grad: return "wgrad";
    case GemmPass::backward: return "bwd";
  }
  return "?";
}

// The three passes a measurement or a table can hold (not `backward`).
inline std::optional<GemmPass> measured_gemm_pass(const std::string& name)
{
  for (GemmPass p : {GemmPass::forward, GemmPass::input_grad, GemmPass::weight_grad})
    if (name == gemm_pass_name(p))
      return p;
  return std::nullopt;
}

} // namespace memwall
