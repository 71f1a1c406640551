#pragma once
// The values memwall-gpubench fills GEMM operands with: uniform in [-1, 1), a different
// one for every element, reproducible from the element's index and a seed.
//
// Why not zeros (cudaMemset 0, as gpubench did first): on Hopper a GEMM of zeros draws
// less power and holds higher clocks, and runs ~11 % faster than on real data (the same
// H100, the same minute: bf16 8192^3 at 882 TFLOP/s on zeros, 792 on random data;
// calibration/data/measured/README.md). Training multiplies weights and activations
// that are nothing like zero, so the benchmark must not either.
//
// Plain C++ (usable on the host, where tests check it without a GPU) and on the device.
#include <cstddef>
#include <cstdint>

#ifdef __CUDACC__
#define GPUBENCH_HD __host__ __device__
#else
#define GPUBENCH_HD
#endif

namespace gpubench {

// SplitMix64 (Steele, Lea, Flood 2014): a full-period 64-bit mix of the index.
GPUBENCH_HD inline uint64_t splitmix64(uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Element i's value: the top 24 bits of its hash, in [-1, 1) in steps of 2^-23.
GPUBENCH_HD inline float operand_value(uint64_t seed, size_t i)
{
  uint64_t h = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(i)));
  return static_cast<float>(h >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

} // namespace gpubench
