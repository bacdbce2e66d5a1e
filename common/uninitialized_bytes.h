// Byte buffers that are not zero-filled when they grow, for buffers written in full right after
// (an HDF5 read, a decode, a batch's frames): a fresh buffer's zeroing is a pass over memory
// that nothing reads.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace roboloop {

// std::allocator, except that an element constructed without a value is default-initialized
// (for a scalar: left as it is) instead of value-initialized (zeroed). So resize(n) on a
// vector with this allocator allocates without writing; elements constructed from values
// (insert, assign, copies) are constructed as usual.
template <typename T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };

  DefaultInitAllocator() = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}

  template <typename U>
  void construct(U* place) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(place)) U;
  }
  template <typename U, typename... Args>
  void construct(U* place, Args&&... args) {
    ::new (static_cast<void*>(place)) U(std::forward<Args>(args)...);
  }
};

// Bytes whose resize leaves the new bytes unwritten: the caller writes them all before reading.
using UninitializedBytes = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;

}  // namespace roboloop
