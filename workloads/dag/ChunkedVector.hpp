#pragma once
// A vector that grows by fixed chunks: elements never move once placed, so growing it
// to millions of entries copies nothing (std::vector's doubling relocated every op of a
// large DAG several times and touched twice the memory). Chunks are raw storage: an
// element is constructed once, where it stays.
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace memwall {

template <typename T, size_t ChunkBits = 12>
class ChunkedVector {
public:
  static constexpr size_t chunk = size_t{1} << ChunkBits;

  ChunkedVector()                                = default;
  ChunkedVector(const ChunkedVector&)            = delete;
  ChunkedVector& operator=(const ChunkedVector&) = delete;
  ChunkedVector(ChunkedVector&& o) noexcept : chunks_(std::move(o.chunks_)), size_(o.size_) { o.size_ = 0; }
  ~ChunkedVector() { clear(); }

  void push_back(T value)
  {
    if (size_ == chunks_.size() * chunk)
      chunks_.emplace_back(static_cast<T*>(::operator new (chunk * sizeof(T), std::align_val_t{alignof(T)})));
    new (&(*this)[size_]) T(std::move(value));
    ++size_;
  }
  T& operator[](size_t i) { return chunks_[i >> ChunkBits].get()[i & (chunk - 1)]; }
  const T& operator[](size_t i) const { return chunks_[i >> ChunkBits].get()[i & (chunk - 1)]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear()
  {
    for (size_t i = 0; i < size_; ++i)
      (*this)[i].~T();
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
  struct Release {
    void operator()(T* p) const { ::operator delete (p, std::align_val_t{alignof(T)}); }
  };
  std::vector<std::unique_ptr<T, Release>> chunks_;
  size_t size_ = 0;
};

} // namespace memwall
