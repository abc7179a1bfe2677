// The C API's fused select and run host-only, over tests/host/fake_library.cpp's registry
// (tests/test_fused_capi.py builds it with dispatch/ckgen_dispatch.cpp). Prints "ok <check>" per
// passed check; "FAIL <check>: ..." and exit 1 on the first failure.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ckgen_dispatch.h"

extern "C" int fake_last_run(const void** bias, const void** scale, const void** residual, float* beta,
                             float* alpha);
extern "C" int fake_last_grad(const void** y, float** db);
extern "C" int fake_last_stats(float** stats);

namespace {

void check(bool ok, const char* what, const std::string& detail = "") {
  if (ok) {
    std::printf("ok %s\n", what);
  } else {
    std::printf("FAIL %s: %s\n", what, detail.c_str());
    std::exit(1);
  }
}

ckgen_problem conv(int64_t N, int64_t C, int64_t K, int64_t hw) {
  ckgen_problem p;
  std::memset(&p, 0, sizeof p);
  p.ndim = 2;
  p.G = 1, p.N = N, p.C = C, p.K = K;
  for (int i = 0; i < 3; ++i) p.in[i] = p.filter[i] = p.stride[i] = p.dilation[i] = 1;
  p.in[1] = p.in[2] = hw;
  p.filter[1] = p.filter[2] = 3;
  p.pad_l[1] = p.pad_l[2] = p.pad_r[1] = p.pad_r[2] = 1;
  return p;
}

std::string name(int i) { return i >= 0 ? ckgen_kernel_name(i) : std::string("-1: ") + ckgen_last_error(); }

bool fused(int i) {
  ckgen_epilogue e;
  return ckgen_kernel_epilogue(i, &e) == CKGEN_OK && (e.channel_op || e.activation || e.residual);
}

alignas(16) unsigned char g_buf[6][256];

}  // namespace

int main() {
  const ckgen_epilogue bias_relu = {CKGEN_CHANNEL_OP_BIAS, CKGEN_ACTIVATION_RELU, 0, 0, 0};
  const ckgen_epilogue ss_silu_res = {CKGEN_CHANNEL_OP_SCALE_SHIFT, CKGEN_ACTIVATION_SILU, 1, 0, 0};
  const ckgen_epilogue none = {0, 0, 0, 0, 0};
  bool plain_only = true, fused_exact = true;
  std::string detail;
  for (int64_t n : {1, 8, 64})
    for (int64_t c : {8, 64, 256})
      for (int64_t hw : {7, 56}) {
        const ckgen_problem p = conv(n, c, c, hw);
        const int a = ckgen_select(&p, "forward", "fp16", nullptr, nullptr);
        const int b = ckgen_select_fused(&p, "forward", "fp16", &bias_relu, nullptr, nullptr);
        const int z = ckgen_select_fused(&p, "forward", "fp16", &none, nullptr, nullptr);
        const int y = ckgen_select_fused(&p, "forward", "fp16", nullptr, nullptr, nullptr);
        if (a < 0 || fused(a) || z != a || y != a) plain_only = false, detail = name(a) + " " + name(z);
        ckgen_epilogue e;
        if (b < 0 || ckgen_kernel_epilogue(b, &e) != CKGEN_OK || e.channel_op != CKGEN_CHANNEL_OP_BIAS ||
            e.activation != CKGEN_ACTIVATION_RELU || e.residual != 0)
          fused_exact = false, detail = name(b);
      }
  check(plain_only, "a plain select never picks a fused kernel", detail);
  check(fused_exact, "a fused select picks a kernel with exactly the requested operations", detail);

  const ckgen_problem p = conv(8, 64, 64, 56);
  const char* src = nullptr;
  const int ss = ckgen_select_fused(&p, "forward", "fp16", &ss_silu_res, nullptr, &src);
  check(ss >= 0 && std::string(ckgen_kernel_name(ss)) == "fwd_ss_silu_res_t64" && src &&
            std::string(src).find("cost-model") == 0,
        "scale_shift_silu_residual by the cost model", name(ss) + " " + (src ? src : ""));
  const ckgen_epilogue lrelu = {0, CKGEN_ACTIVATION_LEAKY_RELU, 0, 0, 0};
  check(ckgen_select_fused(&p, "forward", "fp16", &lrelu, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "fwd_") == nullptr,
        "no kernel with the operations: not found", ckgen_last_error());
  check(ckgen_select_fused(&p, "backward_data", "fp16", &bias_relu, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "gradient mask") != nullptr,
        "a forward epilogue on backward_data refused", ckgen_last_error());
  const ckgen_epilogue drelu = {0, CKGEN_ACTIVATION_DRELU, 0, 0, 0};
  const ckgen_epilogue bgrad_drelu = {CKGEN_CHANNEL_OP_BIAS_GRAD, CKGEN_ACTIVATION_DRELU, 0, 0, 0};
  check(ckgen_select_fused(&p, "forward", "fp16", &drelu, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "backward operations") != nullptr,
        "a gradient mask on forward refused", ckgen_last_error());
  check(ckgen_select_fused(&p, "backward_data", "fp16", &bgrad_drelu, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "backward_weight operation") != nullptr,
        "bias_grad on backward_data refused", ckgen_last_error());
  const int bd = ckgen_select_fused(&p, "backward_data", "fp16", &drelu, nullptr, nullptr);
  const int bw = ckgen_select_fused(&p, "backward_weight", "fp16", &bgrad_drelu, nullptr, nullptr);
  check(name(bd) == "bwd_data_drelu_t64" && name(bw) == "bwd_weight_bgrad_drelu_t64",
        "backward fusions select their kernels", name(bd) + " " + name(bw));
  const ckgen_epilogue bad = {CKGEN_CHANNEL_OP_BIAS_GRAD + 1, 0, 0, 0, 0};
  check(ckgen_select_fused(&p, "forward", "fp16", &bad, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "out of range") != nullptr,
        "operation code out of range refused", ckgen_last_error());
  const int br = ckgen_select_fused(&p, "forward", "fp16", &bias_relu, nullptr, nullptr);
  check(ckgen_select(&p, "forward", "fp16", nullptr, nullptr) != br &&
            ckgen_select_fused(&p, "forward", "fp16", &bias_relu, nullptr, nullptr) == br,
        "the selection cache keeps fused and plain answers apart");

  void* x = g_buf[0];
  void* w = g_buf[1];
  void* y = g_buf[2];
  const float* bias = reinterpret_cast<const float*>(g_buf[3]);
  const float* scale = reinterpret_cast<const float*>(g_buf[4]);
  const void* res = g_buf[5];
  ckgen_epilogue_args args = {bias, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, nullptr};
  int rc = ckgen_run_fused(br, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  const void *rb = nullptr, *rs = nullptr, *rr = nullptr;
  float beta = 0, alpha = 0;
  const int runs = fake_last_run(&rb, &rs, &rr, &beta, &alpha);
  check(rc == CKGEN_OK && runs == 1 && rb == bias && rs == nullptr && rr == nullptr, "run_fused passes the operands",
        ckgen_last_error());
  args = {bias, scale, res, 0.5f, 0.2f, nullptr, nullptr, nullptr};
  rc = ckgen_run_fused(ss, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  fake_last_run(&rb, &rs, &rr, &beta, &alpha);
  check(rc == CKGEN_OK && rb == bias && rs == scale && rr == res && beta == 0.5f && alpha == 0.2f,
        "run_fused passes scale, residual, beta and alpha", ckgen_last_error());
  args = {nullptr, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, nullptr};
  rc = ckgen_run_fused(br, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "needs bias vector"), "missing bias refused",
        ckgen_last_error());
  rc = ckgen_run(br, &p, x, w, y, nullptr, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "ckgen_run_fused"),
        "plain run of a fused kernel refused", ckgen_last_error());
  args = {bias, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, nullptr};
  rc = ckgen_run_fused(ckgen_select(&p, "forward", "fp16", nullptr, nullptr), &p, x, -1, w, -1, y, -1, &args,
                       nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "reads no bias"), "bias on a plain kernel refused",
        ckgen_last_error());
  args = {bias, scale, static_cast<const unsigned char*>(res) + 4, 1.f, 0.01f, nullptr, nullptr, nullptr};
  rc = ckgen_run_fused(ss, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "16-byte"), "misaligned residual refused",
        ckgen_last_error());
  check(fake_last_run(&rb, &rs, &rr, &beta, &alpha) == 2, "refused runs launch nothing");

  const void* saved = g_buf[5];
  float* db = reinterpret_cast<float*>(g_buf[4]);
  args = {nullptr, nullptr, nullptr, 1.f, 0.01f, saved, db, nullptr};
  rc = ckgen_run_fused(bw, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  const void* ry = nullptr;
  float* rdb = nullptr;
  check(rc == CKGEN_OK && fake_last_grad(&ry, &rdb) == 3 && ry == saved && rdb == db,
        "run_fused passes y and db", ckgen_last_error());
  args = {nullptr, nullptr, nullptr, 1.f, 0.01f, saved, nullptr, nullptr};
  rc = ckgen_run_fused(bw, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "needs bias gradient db"), "missing db refused",
        ckgen_last_error());
  args = {nullptr, nullptr, nullptr, 1.f, 0.01f, saved, db, nullptr};
  rc = ckgen_run_fused(bd, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "reads no bias gradient db"),
        "db given to a mask-only kernel refused", ckgen_last_error());
  args = {nullptr, nullptr, nullptr, 1.f, 0.01f, static_cast<const unsigned char*>(saved) + 2, nullptr, nullptr};
  rc = ckgen_run_fused(bd, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "16-byte"), "misaligned y refused",
        ckgen_last_error());
  check(fake_last_grad(&ry, &rdb) == 3, "refused backward runs launch nothing");

  // stats: a forward operation, selected apart from the same operations without it
  const ckgen_epilogue br_stats = {CKGEN_CHANNEL_OP_BIAS, CKGEN_ACTIVATION_RELU, 0, 1, 0};
  const int st = ckgen_select_fused(&p, "forward", "fp16", &br_stats, nullptr, nullptr);
  ckgen_epilogue se;
  check(name(st) == "fwd_bias_relu_stats_t64" && ckgen_kernel_epilogue(st, &se) == CKGEN_OK && se.stats == 1 &&
            ckgen_select_fused(&p, "forward", "fp16", &bias_relu, nullptr, nullptr) == br,
        "stats selects its own kernel", name(st));
  check(ckgen_select_fused(&p, "backward_data", "fp16", &br_stats, nullptr, nullptr) == -1,
        "stats on backward_data refused", ckgen_last_error());
  float* stats = reinterpret_cast<float*>(g_buf[4]);
  args = {bias, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, stats};
  rc = ckgen_run_fused(st, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  float* rst = nullptr;
  check(rc == CKGEN_OK && fake_last_stats(&rst) == 4 && rst == stats, "run_fused passes stats", ckgen_last_error());
  args = {bias, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, nullptr};
  rc = ckgen_run_fused(st, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "needs statistics output stats"),
        "missing stats refused", ckgen_last_error());
  args = {bias, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, stats};
  rc = ckgen_run_fused(br, &p, x, -1, w, -1, y, -1, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), "reads no statistics output"),
        "stats given to a kernel without it refused", ckgen_last_error());

  // output conversion: fp16 inputs written as fp32
  const ckgen_epilogue br_f32 = {CKGEN_CHANNEL_OP_BIAS, CKGEN_ACTIVATION_RELU, 0, 0, CKGEN_OUT_FP32};
  const int cv = ckgen_select_fused(&p, "forward", "fp16", &br_f32, nullptr, nullptr);
  ckgen_epilogue ce;
  check(name(cv) == "fwd_bias_relu_ofp32_t64" && ckgen_kernel_epilogue(cv, &ce) == CKGEN_OK &&
            ce.out_datatype == CKGEN_OUT_FP32,
        "a conversion selects its own kernel", name(cv));
  check(ckgen_select_fused(&p, "backward_data", "fp16", &br_f32, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "forward operation"),
        "a conversion on backward_data refused", ckgen_last_error());
  const ckgen_epilogue br_f16 = {CKGEN_CHANNEL_OP_BIAS, CKGEN_ACTIVATION_RELU, 0, 0, CKGEN_OUT_FP16};
  check(ckgen_select_fused(&p, "forward", "fp16", &br_f16, nullptr, nullptr) == br,
        "a conversion to the inputs' own datatype selects the plain fusion", ckgen_last_error());
  const ckgen_epilogue bad_out = {0, 0, 0, 0, 4};
  check(ckgen_select_fused(&p, "forward", "fp16", &bad_out, nullptr, nullptr) == -1 &&
            std::strstr(ckgen_last_error(), "out_datatype 4 out of range"),
        "an out_datatype code out of range refused", ckgen_last_error());
  int64_t in_b = 0, wei_b = 0, out_b = 0;
  check(ckgen_tensor_bytes(&p, "fp16", &in_b, &wei_b, &out_b) == CKGEN_OK, "tensor bytes", ckgen_last_error());
  args = {bias, nullptr, nullptr, 1.f, 0.01f, nullptr, nullptr, nullptr};
  rc = ckgen_run_fused(cv, &p, x, in_b, w, wei_b, y, out_b, &args, nullptr, 0, nullptr, 1);
  check(rc == CKGEN_E_INVALID && std::strstr(ckgen_last_error(), ("needs " + std::to_string(2 * out_b)).c_str()),
        "a conversion's output is sized in its datatype", ckgen_last_error());
  std::printf("all passed\n");
  return 0;
}
