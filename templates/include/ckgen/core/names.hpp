// Words -> enums of a closed vocabulary: the one parser every enum's name shares (each enum's
// to_string lives beside it: core/vocab.hpp, kernel/kernel_base.hpp, host/init.hpp, host/runner.hpp).
#pragma once

#include <initializer_list>
#include <string>

namespace ckgen {

// The value among `values` whose to_string is `s` into `out`; false (out untouched) for none.
template <class Range, class E>
bool parse_name(const std::string& s, const Range& values, E& out) {
  for (E v : values)
    if (s == to_string(v)) {
      out = v;
      return true;
    }
  return false;
}
template <class E>
bool parse_name(const std::string& s, std::initializer_list<E> values, E& out) {
  return parse_name<std::initializer_list<E>, E>(s, values, out);
}

}  // namespace ckgen
