// Checked arithmetic for sizes and counts computed from input: the one place where a reader
// multiplies or adds numbers it was given (layers x parameters x bytes, a range's length, an
// element count doubled), so that a value near the top of its type is an InputError naming what
// was computed, never a wrapped integer, an endless loop or a huge allocation.
//
//   const std::uint64_t bytes = checked_mul(params, bytes_per_param, "model gradients (bytes)");
//   // InputError "model gradients (bytes): 288230376151711744 * 4 is above 18446744073709551615"
//   std::optional<long long> next = try_mul(elems, 2LL);  // std::nullopt when it would overflow
//
// With a callable instead of a text, the callable reports the error (it must throw), so that a
// config reader can name the file, line and column: checked_add(a, b, [&](const std::string& m)
// { node.fail(m); }).
#pragma once

#include <concepts>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

#include "common/error.hpp"

namespace ssim {

template <std::integral T>
std::optional<T> try_mul(T a, T b) {
  T out{};
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}

template <std::integral T>
std::optional<T> try_add(T a, T b) {
  T out{};
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

namespace checked_detail {

template <std::integral T>
std::string overflow_message(T a, T b, const char* op) {
  return std::to_string(a) + " " + op + " " + std::to_string(b) + " is outside [" +
         std::to_string(std::numeric_limits<T>::min()) + ", " +
         std::to_string(std::numeric_limits<T>::max()) + "]";
}

template <class Fail>
[[noreturn]] void report(Fail&& fail, const std::string& message) {
  if constexpr (std::is_convertible_v<Fail, std::string_view>) {
    throw InputError(std::string(std::string_view(fail)) + ": " + message);
  } else {
    fail(message);
    throw InputError(message);  // a callable that returned: still an error
  }
}

}  // namespace checked_detail

// a * b; on overflow an InputError "CONTEXT: A * B is outside [MIN, MAX]" (context: a text) or
// the callable called with "A * B is outside [MIN, MAX]".
template <std::integral T, class Context>
T checked_mul(T a, T b, Context&& context) {
  if (const std::optional<T> v = try_mul(a, b)) return *v;
  checked_detail::report(std::forward<Context>(context),
                         checked_detail::overflow_message(a, b, "*"));
}

// a + b; on overflow as checked_mul.
template <std::integral T, class Context>
T checked_add(T a, T b, Context&& context) {
  if (const std::optional<T> v = try_add(a, b)) return *v;
  checked_detail::report(std::forward<Context>(context),
                         checked_detail::overflow_message(a, b, "+"));
}

}  // namespace ssim
