#pragma once
// Numeric formats a GPU computes in and a tensor is stored in.
#include <optional>
#include <string>
#include <vector>

namespace memwall {

// fp4: NVFP4 (Blackwell) or MXFP4 (OCP; AMD CDNA 4): 4-bit e2m1 elements with a shared
// 8-bit scale per block of 16 (NVFP4) or 32 (MXFP4); stored at NVFP4's 4.5 bits.
enum class Dtype : uint8_t { fp32, tf32, bf16, fp16, fp8, int8, int4, fp4 };

inline const std::vector<Dtype>& all_dtypes()
{
  static const std::vector<Dtype> all{Dtype::fp32, Dtype::tf32, Dtype::bf16, Dtype::fp16,
                                      Dtype::fp8,  Dtype::int8, Dtype::int4, Dtype::fp4};
  return all;
}

inline const char* dtype_name(Dtype d)
{
  switch (d) {
    case Dtype::fp32: return "fp32";
    case Dtype::tf32: return "tf32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
    case Dtype::fp8: return "fp8";
    case Dtype::int8: return "int8";
    case Dtype::int4: return "int4";
    case Dtype::fp4: return "fp4";
  }
  return "?";
}

inline std::optional<Dtype> dtype_from_name(const std::string& s)
{
  for (Dtype d : all_dtypes())
    if (s == dtype_name(d))
      return d;
  return std::nullopt;
}

// FP8 as MoE dispatchers send activations (DeepEP; DeepSeek-V3 §3.3.2): a byte per
// element and a 32-bit scale per 128 elements.
constexpr double fp8_block_scaled_bytes = 1 + 4.0 / 128;

// Storage size of one element in bytes (tf32 is stored as fp32).
inline double dtype_bytes(Dtype d)
{
  switch (d) {
    case Dtype::fp32:
    case Dtype::tf32: return 4.0;
    case Dtype::bf16:
    case Dtype::fp16: return 2.0;
    case Dtype::fp8:
    case Dtype::int8: return 1.0;
    case Dtype::int4: return 0.5;
    case Dtype::fp4: return 4.5 / 8;
  }
  return 4.0;
}

} // namespace memwall
