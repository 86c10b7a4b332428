// Overflow-checked size arithmetic. Every product of dims (tensor shapes, shape inference, fills,
// deserialised tensors, reshape targets, scratch buffers) goes through these, so a hostile shape
// fails with an EnforceNotMet naming what it belongs to and the dims instead of wrapping around.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/enforce.h"

namespace halfcaf {

namespace detail {
// Product of dims, or false when a dim is negative or the product of the non-zero dims overflows
// int64 (checking those too makes every sub-product of a valid shape safe, even with a 0 dim).
bool NumelOf(const std::vector<int64_t>& dims, int64_t* numel);
[[noreturn]] void ThrowBadShape(const std::vector<int64_t>& dims, const std::string& what);
[[noreturn]] void ThrowMulOverflow(int64_t a, int64_t b, const std::string& what);
[[noreturn]] void ThrowAddOverflow(int64_t a, int64_t b, const std::string& what);
}  // namespace detail

// Number of elements of `dims`. Throws on a negative dim or an overflowing product; the message
// starts with the concatenated `what` ("blob 'x'", "TensorProto 'y'"), built only on failure.
template <typename... What>
int64_t CheckedNumel(const std::vector<int64_t>& dims, const What&... what) {
  int64_t n;
  if (!detail::NumelOf(dims, &n)) detail::ThrowBadShape(dims, MakeString(what...));
  return n;
}

// a * b for sizes >= 0; throws naming `what` when the product overflows int64.
template <typename... What>
int64_t CheckedMul(int64_t a, int64_t b, const What&... what) {
  int64_t p;
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &p)) {
    detail::ThrowMulOverflow(a, b, MakeString(what...));
  }
  return p;
}

// a + b for sizes >= 0; throws naming `what` when the sum overflows int64.
template <typename... What>
int64_t CheckedAdd(int64_t a, int64_t b, const What&... what) {
  int64_t p;
  if (a < 0 || b < 0 || __builtin_add_overflow(a, b, &p)) {
    detail::ThrowAddOverflow(a, b, MakeString(what...));
  }
  return p;
}

// Bytes of `numel` elements of `item_size` bytes; throws naming `what` when that overflows
// size_t (or int64, so that byte counts stay representable everywhere).
template <typename... What>
size_t CheckedBytes(int64_t numel, size_t item_size, const What&... what) {
  return static_cast<size_t>(CheckedMul(numel, static_cast<int64_t>(item_size), what...));
}

}  // namespace halfcaf
