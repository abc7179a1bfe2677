// wgmma.mma_async with the A operand in registers (m64nNk16, fp16 / bf16 in, fp32 accumulate):
// wgmma_detail::OpRS<N, BF16, TB>::run(d, a, db), N = 64, 128, 192, 256 (the backward_data tile
// widths of pipeline/tma_ws.hpp). a: this thread's four 32-bit registers of the warpgroup's
// m64 x k16 A fragment (warp w of the group holds rows 16w..16w+15 in mma.sync m16n8k16's A
// layout: a0 rows r, a1 rows r + 8, a2 / a3 the same rows at k + 8); db: B's shared-memory
// descriptor (tnsp TB). A gradient mask multiplies dy into these registers as they are loaded
// (pipeline/tma_ws_steps.hpp load_masked_a). The accumulator operands and their placeholders are
// built by the macros below (eight at a time).
#pragma once

#include <cstdint>

#include "ckgen/warp/mma_wgmma.hpp"

namespace ckgen {

namespace wgmma_detail {

#define CKGEN_WG_S0 "%0,%1,%2,%3,%4,%5,%6,%7"
#define CKGEN_WG_S1 "%8,%9,%10,%11,%12,%13,%14,%15"
#define CKGEN_WG_S2 "%16,%17,%18,%19,%20,%21,%22,%23"
#define CKGEN_WG_S3 "%24,%25,%26,%27,%28,%29,%30,%31"
#define CKGEN_WG_S4 "%32,%33,%34,%35,%36,%37,%38,%39"
#define CKGEN_WG_S5 "%40,%41,%42,%43,%44,%45,%46,%47"
#define CKGEN_WG_S6 "%48,%49,%50,%51,%52,%53,%54,%55"
#define CKGEN_WG_S7 "%56,%57,%58,%59,%60,%61,%62,%63"
#define CKGEN_WG_S8 "%64,%65,%66,%67,%68,%69,%70,%71"
#define CKGEN_WG_S9 "%72,%73,%74,%75,%76,%77,%78,%79"
#define CKGEN_WG_S10 "%80,%81,%82,%83,%84,%85,%86,%87"
#define CKGEN_WG_S11 "%88,%89,%90,%91,%92,%93,%94,%95"
#define CKGEN_WG_S12 "%96,%97,%98,%99,%100,%101,%102,%103"
#define CKGEN_WG_S13 "%104,%105,%106,%107,%108,%109,%110,%111"
#define CKGEN_WG_S14 "%112,%113,%114,%115,%116,%117,%118,%119"
#define CKGEN_WG_S15 "%120,%121,%122,%123,%124,%125,%126,%127"
#define CKGEN_WG_D8(b) "+f"(d[b]), "+f"(d[b + 1]), "+f"(d[b + 2]), "+f"(d[b + 3]), "+f"(d[b + 4]), "+f"(d[b + 5]), "+f"(d[b + 6]), "+f"(d[b + 7])
#define CKGEN_WG_D32(b) CKGEN_WG_D8(b), CKGEN_WG_D8(b + 8), CKGEN_WG_D8(b + 16), CKGEN_WG_D8(b + 24)
#define CKGEN_WG_S32A CKGEN_WG_S0 "," CKGEN_WG_S1 "," CKGEN_WG_S2 "," CKGEN_WG_S3
#define CKGEN_WG_S32B CKGEN_WG_S4 "," CKGEN_WG_S5 "," CKGEN_WG_S6 "," CKGEN_WG_S7
#define CKGEN_WG_S32C CKGEN_WG_S8 "," CKGEN_WG_S9 "," CKGEN_WG_S10 "," CKGEN_WG_S11
#define CKGEN_WG_S32D CKGEN_WG_S12 "," CKGEN_WG_S13 "," CKGEN_WG_S14 "," CKGEN_WG_S15

// The instruction of one width and input type: inputs after the N / 2 accumulators are a0..a3,
// db, the scale-d flag and TB (placeholders b .. b + 6, b = N / 2); the accumulator operands last.
#if defined(CKGEN_HAS_WGMMA)
#define CKGEN_WGMMA_RS(N, BF, TYPE, ACCS, A4, DB, PD, TBI, ...)                                                 \
  template <int TB>                                                                                          \
  struct OpRS<N, BF, TB> {                                                                                   \
    CKGEN_DEVICE CKGEN_FORCEINLINE static void run(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) { \
      asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " PD ", 0;\n"                                          \
                   "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." TYPE "." TYPE " {" ACCS "}, " A4 ", " DB  \
                   ", p, 1, 1, " TBI ";\n}\n"                                                                \
                   : __VA_ARGS__                                                                             \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1), "n"(TB));                 \
    }                                                                                                        \
  };
#else
#define CKGEN_WGMMA_RS(N, BF, TYPE, ACCS, A4, DB, PD, TBI, ...)                                    \
  template <int TB>                                                                             \
  struct OpRS<N, BF, TB> {                                                                      \
    CKGEN_DEVICE CKGEN_FORCEINLINE static void run(float (&)[N / 2], const uint32_t (&)[4], uint64_t) {} \
  };
#endif

template <int N, bool BF16, int TB>
struct OpRS;
CKGEN_WGMMA_RS(64, false, "f16", CKGEN_WG_S32A, "{%32,%33,%34,%35}", "%36", "%37", "%38", CKGEN_WG_D32(0))
CKGEN_WGMMA_RS(64, true, "bf16", CKGEN_WG_S32A, "{%32,%33,%34,%35}", "%36", "%37", "%38", CKGEN_WG_D32(0))
CKGEN_WGMMA_RS(128, false, "f16", CKGEN_WG_S32A "," CKGEN_WG_S32B, "{%64,%65,%66,%67}", "%68", "%69", "%70", CKGEN_WG_D32(0), CKGEN_WG_D32(32))
CKGEN_WGMMA_RS(128, true, "bf16", CKGEN_WG_S32A "," CKGEN_WG_S32B, "{%64,%65,%66,%67}", "%68", "%69", "%70", CKGEN_WG_D32(0), CKGEN_WG_D32(32))
CKGEN_WGMMA_RS(192, false, "f16", CKGEN_WG_S32A "," CKGEN_WG_S32B "," CKGEN_WG_S32C, "{%96,%97,%98,%99}", "%100", "%101", "%102", CKGEN_WG_D32(0), CKGEN_WG_D32(32), CKGEN_WG_D32(64))
CKGEN_WGMMA_RS(192, true, "bf16", CKGEN_WG_S32A "," CKGEN_WG_S32B "," CKGEN_WG_S32C, "{%96,%97,%98,%99}", "%100", "%101", "%102", CKGEN_WG_D32(0), CKGEN_WG_D32(32), CKGEN_WG_D32(64))
CKGEN_WGMMA_RS(256, false, "f16", CKGEN_WG_S32A "," CKGEN_WG_S32B "," CKGEN_WG_S32C "," CKGEN_WG_S32D, "{%128,%129,%130,%131}", "%132", "%133", "%134", CKGEN_WG_D32(0), CKGEN_WG_D32(32), CKGEN_WG_D32(64), CKGEN_WG_D32(96))
CKGEN_WGMMA_RS(256, true, "bf16", CKGEN_WG_S32A "," CKGEN_WG_S32B "," CKGEN_WG_S32C "," CKGEN_WG_S32D, "{%128,%129,%130,%131}", "%132", "%133", "%134", CKGEN_WG_D32(0), CKGEN_WG_D32(32), CKGEN_WG_D32(64), CKGEN_WG_D32(96))

#undef CKGEN_WGMMA_RS
#undef CKGEN_WG_S0
#undef CKGEN_WG_S1
#undef CKGEN_WG_S2
#undef CKGEN_WG_S3
#undef CKGEN_WG_S4
#undef CKGEN_WG_S5
#undef CKGEN_WG_S6
#undef CKGEN_WG_S7
#undef CKGEN_WG_S8
#undef CKGEN_WG_S9
#undef CKGEN_WG_S10
#undef CKGEN_WG_S11
#undef CKGEN_WG_S12
#undef CKGEN_WG_S13
#undef CKGEN_WG_S14
#undef CKGEN_WG_S15
#undef CKGEN_WG_D8
#undef CKGEN_WG_D32
#undef CKGEN_WG_S32A
#undef CKGEN_WG_S32B
#undef CKGEN_WG_S32C
#undef CKGEN_WG_S32D

}  // namespace wgmma_detail

}  // namespace ckgen
