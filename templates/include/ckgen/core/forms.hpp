// Rendered from ckgen/space/forms.py by `python -m ckgen.model.cxx`; do not edit by hand.
// The kernel forms the C++ tells apart from an instance's words.
#pragma once

#include "ckgen/core/vocab.hpp"

namespace ckgen {

// backward_weight's row form (TmaTraits::kRows): a tile one filter row's taps, a k
// tile a segment of an output row.
constexpr bool is_row_form(Pipeline p, Variant v, Specialization s) {
  return p == ckgen::Pipeline::WaveletTma && v == ckgen::Variant::BackwardWeight &&
         s == ckgen::Specialization::Stride1;
}

}  // namespace ckgen
