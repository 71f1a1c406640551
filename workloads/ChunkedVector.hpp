#pragma once
// A vector that grows by fixed chunks: elements never move once placed, so growing it
// to millions of entries copies nothing (std::vector's doubling relocated every op of a
// large DAG several times and touched twice the memory).
#include <cstddef>
#include <memory>
#include <vector>

namespace memwall {

template <typename T, size_t ChunkBits = 12>
class ChunkedVector {
public:
  static constexpr size_t chunk = size_t{1} << ChunkBits;

  void push_back(T value)
  {
    if (size_ == chunks_.size() * chunk)
      chunks_.push_back(std::make_unique<T[]>(chunk));
    chunks_[size_ >> ChunkBits][size_ & (chunk - 1)] = std::move(value);
    ++size_;
  }
  T& operator[](size_t i) { return chunks_[i >> ChunkBits][i & (chunk - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> ChunkBits][i & (chunk - 1)]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear()
  {
    chunks_.clear();
    size_ = 0;
  }
  template <typename F>
  void for_each(F f) const
  {
    for (size_t i = 0; i < size_; ++i)
      f((*this)[i]);
  }

private:
  std::vector<std::unique_ptr<T[]>> chunks_;
  size_t size_ = 0;
};

} // namespace memwall
