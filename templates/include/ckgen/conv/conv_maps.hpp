// Implicit-GEMM index maps, one "view" per variant.
//
// A view is built per block on the device from ConvArgs (host-filled once per call) and the
// block's group / class index. It answers, for the block's GEMM (per group, per class):
//   M(), N(), K()                 the GEMM sizes
//   a_fix(mn) / a_k(k) / a_ptr(fix, k, ok)  where element A[m, k..] (or A[m.., k]) lives;
//                                 ok = false for a structural zero (padding, outside the GEMM),
//                                 and then the pointer is the tensor base (always a valid
//                                 address, so loads can be issued unconditionally: no branch)
//   b_fix(mn) / b_k(k) / b_ptr()  same for B[k, n]
//   c_row(m)                      element offset of C[m, 0] (C is contiguous along n)
// The `fix` part depends only on the M/N coordinate (computed once per block), the `k` part
// only on the reduction coordinate (computed every k step), so loaders split the index math.
// A vector of V elements along the contiguous dim never crosses a channel run: is_supported
// checks the channel counts are multiples of V, and the tile starts are V aligned.
//
// All tensor offsets are 64-bit; GEMM coordinates and per-image spatial products are < 2^31
// (is_supported refuses larger problems).
//
// Views: conv/views.hpp (one group), conv/merged_views.hpp (groups_to_merge > 1); ViewFor below
// picks one for a variant, specialization and merge count.
#pragma once

#include <cstdint>
#include <type_traits>

#include "ckgen/conv/conv_args.hpp"
#include "ckgen/conv/merged_views.hpp"
#include "ckgen/conv/views.hpp"
#include "ckgen/core/config_traits.hpp"

namespace ckgen {

// Whether the A operand's cp.async copies go through L1 (async_copy_zfill<.., L1>): an
// optional Config::kCacheA (1 / 0) decides, else the view's kL1A (merged views: true).
template <class C, class = void> struct config_cache_a { static constexpr int value = -1; };
template <class C> struct config_cache_a<C, std::void_t<decltype(C::kCacheA)>> {
  static constexpr int value = C::kCacheA == 0 ? 0 : C::kCacheA == 1 ? 1 : -1;
};
template <class V, class = void> struct view_l1_a { static constexpr bool value = false; };
template <class V> struct view_l1_a<V, std::void_t<decltype(V::kL1A)>> {
  static constexpr bool value = V::kL1A;
};
template <class C, class V>
constexpr bool cache_a_l1() {
  return config_cache_a<C>::value == 1 || (config_cache_a<C>::value == -1 && view_l1_a<V>::value);
}

// GM: groups merged per block (kGroupsToMerge); GM > 1 selects the merged views
// (forward / backward_data only).
template <Variant V, typename Raw, Specialization S, int GM = 1> struct ViewFor;
template <typename Raw, Specialization S> struct ViewFor<Variant::Forward, Raw, S, 1> {
  using type = FwdView<Raw, S>;
};
template <typename Raw, Specialization S> struct ViewFor<Variant::BackwardData, Raw, S, 1> {
  using type = BwdDataView<Raw, S>;
};
template <typename Raw, Specialization S> struct ViewFor<Variant::BackwardWeight, Raw, S, 1> {
  using type = BwdWeightView<Raw, S>;
};
template <typename Raw, Specialization S, int GM> struct ViewFor<Variant::Forward, Raw, S, GM> {
  using type = FwdMergedView<Raw, GM>;
};
template <typename Raw, Specialization S, int GM> struct ViewFor<Variant::BackwardData, Raw, S, GM> {
  using type = BwdDataMergedView<Raw, GM>;
};

}  // namespace ckgen
