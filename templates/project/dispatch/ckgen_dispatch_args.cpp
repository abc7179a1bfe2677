// The C API's arguments (ckgen_dispatch.cpp) turned into ckgen's types and checked before a
// selection or a launch: the problem struct, the epilogue codes, a run's pointers and buffer sizes.
#include "ckgen_dispatch_args.hpp"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <sstream>
#include <string>

namespace ckgen::capi {

namespace {

// A field past 2^31-1 is refused before any arithmetic on it (the output size, the element
// counts) can overflow.
std::string field_overflow(const ckgen_problem* c) {
  auto big = [](int64_t v) { return v > int64_t(INT32_MAX); };
  const char* names[4] = {"G", "N", "C", "K"};
  const int64_t vals[4] = {c->G, c->N, c->C, c->K};
  for (int i = 0; i < 4; ++i)
    if (big(vals[i])) return std::string(names[i]) + " = " + std::to_string(vals[i]) + " exceeds 2^31-1";
  const char* arr_names[6] = {"in", "filter", "stride", "dilation", "pad_l", "pad_r"};
  const int64_t* arrs[6] = {c->in, c->filter, c->stride, c->dilation, c->pad_l, c->pad_r};
  for (int a = 0; a < 6; ++a)
    for (int i = 0; i < 3; ++i)
      if (big(arrs[a][i]))
        return std::string(arr_names[a]) + "[" + std::to_string(i) + "] = " + std::to_string(arrs[a][i]) +
               " exceeds 2^31-1";
  return {};
}

// x * y * ... without int64 overflow (false on overflow).
bool mul_ok(int64_t& acc, int64_t v) { return !__builtin_mul_overflow(acc, v, &acc); }

// What the kernel reads and writes through each pointer of ckgen_run: the vector width it
// uses on it (the A / B / C operands of its GEMM view, by variant).
struct TensorUse {
  const char* name;
  void* ptr;
  int64_t have_bytes;
  int vec;
};

}  // namespace

// Element counts of x, w, y; false (and why) when one overflows int64 or its bytes do.
bool tensor_elems(const ckgen::ConvProblem& p, int64_t elem_bytes, int64_t e[3], std::string& why) {
  int64_t x = p.N, w = p.G, y = p.N;
  bool ok = true;
  for (int i = 0; i < 3; ++i) ok = ok && mul_ok(x, p.in[i]) && mul_ok(y, p.out[i]) && mul_ok(w, p.filter[i]);
  ok = ok && mul_ok(x, p.G) && mul_ok(x, p.C) && mul_ok(w, p.K) && mul_ok(w, p.C) && mul_ok(y, p.G) &&
       mul_ok(y, p.K);
  int64_t bx = x, bw = w, by = y;
  ok = ok && mul_ok(bx, elem_bytes) && mul_ok(bw, elem_bytes) && mul_ok(by, elem_bytes);
  if (!ok) {
    why = "invalid problem: a tensor's size overflows int64";
    return false;
  }
  e[0] = x;
  e[1] = w;
  e[2] = y;
  return true;
}

bool to_problem(const ckgen_problem* c, ckgen::ConvProblem& p, std::string& why) {
  if (!c) {
    why = "problem is NULL";
    return false;
  }
  if (std::string o = field_overflow(c); !o.empty()) {
    why = "invalid problem: " + o;
    return false;
  }
  p.ndim = c->ndim;
  p.G = c->G;
  p.N = c->N;
  p.C = c->C;
  p.K = c->K;
  for (int i = 0; i < 3; ++i) {
    p.in[i] = c->in[i];
    p.filter[i] = c->filter[i];
    p.stride[i] = c->stride[i];
    p.dilation[i] = c->dilation[i];
    p.pad_l[i] = c->pad_l[i];
    p.pad_r[i] = c->pad_r[i];
  }
  // validate() first: compute_output divides by the strides
  why = p.validate();
  if (!why.empty()) {
    why = "invalid problem: " + why;
    return false;
  }
  p.compute_output();
  int64_t e[3];
  return tensor_elems(p, 4, e, why);
}

int64_t dtype_bytes(ckgen::DataType d) { return ckgen::elem_bytes(d); }

// Refusal of a run's arguments before any launch ("" when fine).
std::string check_run_args(const ckgen::KernelBase& k, const ckgen::ConvProblem& p, void* in, int64_t in_bytes,
                           void* wei, int64_t wei_bytes, void* out, int64_t out_bytes, void* workspace,
                           int64_t workspace_have, int64_t workspace_need) {
  const ckgen::KernelKey& key = k.key();
  int64_t elems[3];
  std::string why;
  if (!tensor_elems(p, 4, elems, why)) return why;
  int vin = key.vec_a, vwei = key.vec_b, vout = key.vec_c;  // forward: A = x, B = w, C = y
  if (key.variant == ckgen::Variant::BackwardData) {        // A = dy, B = w, C = dx
    vout = key.vec_a;
    vwei = key.vec_b;
    vin = key.vec_c;
  } else if (key.variant == ckgen::Variant::BackwardWeight) {  // A = dy, B = x, C = dw
    vout = key.vec_a;
    vin = key.vec_b;
    vwei = key.vec_c;
  }
  const TensorUse uses[3] = {{"in (x / dx)", in, in_bytes, vin},
                             {"wei (w / dw)", wei, wei_bytes, vwei},
                             {"out (y / dy)", out, out_bytes, vout}};
  for (int i = 0; i < 3; ++i) {
    const TensorUse& u = uses[i];
    // a forward's y in the output's datatype (key.out_datatype; a fused conversion's differs)
    const ckgen::DataType dt = i == 2 && key.variant == ckgen::Variant::Forward ? key.out_datatype : key.datatype;
    const int64_t eb = dtype_bytes(dt);
    if (!u.ptr) return std::string(u.name) + " pointer is NULL";
    // a vector access is at most 16 bytes; every access is at least one element
    const int64_t align = std::min<int64_t>(16, std::max<int64_t>(1, u.vec) * eb);
    if (reinterpret_cast<uintptr_t>(u.ptr) % uintptr_t(align) != 0) {
      std::ostringstream os;
      os << u.name << " pointer " << u.ptr << " is not " << align << "-byte aligned (vector width "
         << std::max(1, u.vec) << " x " << eb << "-byte " << ckgen::to_string(dt)
         << " elements); pass an aligned buffer or choose a narrower-vector kernel";
      return os.str();
    }
    if (u.have_bytes >= 0 && u.have_bytes < elems[i] * eb)
      return std::string(u.name) + " buffer holds " + std::to_string(u.have_bytes) + " bytes, the problem needs " +
             std::to_string(elems[i] * eb) + " (" + std::to_string(elems[i]) + " elements)";
  }
  if (workspace_need > 0) {
    if (!workspace)
      return "needs " + std::to_string(workspace_need) + " bytes of workspace, got NULL";
    if (reinterpret_cast<uintptr_t>(workspace) % 16 != 0) return "workspace pointer is not 16-byte aligned";
    if (workspace_have >= 0 && workspace_have < workspace_need)
      return "workspace holds " + std::to_string(workspace_have) + " bytes, needs " + std::to_string(workspace_need);
  }
  return {};
}

// The operations of a ckgen_epilogue (NULL: none); false (and why) for a code out of range.
bool to_ops(const ckgen_epilogue* c, ckgen::EpilogueOps& ops, std::string& why) {
  ops = {};
  if (!c) return true;
  if (c->channel_op < 0 || c->channel_op > int(ckgen::ChannelOp::BiasGrad) || c->activation < 0 ||
      c->activation > int(ckgen::Activation::DLeakyRelu) || c->residual < 0 || c->residual > 1 || c->stats < 0 ||
      c->stats > 1 || c->out_datatype < 0 || c->out_datatype > 1 + int(ckgen::DataType::FP32)) {
    why = "invalid epilogue: channel_op " + std::to_string(c->channel_op) + ", activation " +
          std::to_string(c->activation) + ", residual " + std::to_string(c->residual) + ", stats " +
          std::to_string(c->stats) + ", out_datatype " + std::to_string(c->out_datatype) + " out of range";
    return false;
  }
  ops.channel_op = ckgen::ChannelOp(c->channel_op);
  ops.activation = ckgen::Activation(c->activation);
  ops.residual = c->residual != 0;
  ops.stats = c->stats != 0;
  ops.out_datatype = c->out_datatype;
  return true;
}

}  // namespace ckgen::capi
