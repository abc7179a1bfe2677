// Channel-padding faces (kernel/channel_pad.hpp) without a GPU: the inner instance is a fake fp32
// instance of 4-element vectors that computes the fp64 reference on whatever problem it is given
// and refuses channels that are not whole vectors. Through its face, every variant must give the
// reference of the user's (unpadded) problem exactly, with a poisoned output and garbage in the
// workspace; the face refuses problems its inner instance runs itself, the registry gives faces
// only to plain split-K instances of whole vectors, and the cost model prices a face as its
// instance on the padded problem plus the copies. Over a fake direct instance (C = K = Cg per
// group, G * Cg whole vectors) the face adds groups instead, for depthwise and small groups, and
// runs a depthwise channel multiplier (C = 1, K = M) as G * M groups.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ckgen/kernel/channel_pad.hpp"
#include "reference_kernel.hpp"

using namespace ckgen_test;

namespace {

// A direct instance's refusals: C = K = Cg per group, a pixel's G * Cg channels whole vectors.
struct DirectReference : ReferenceKernel {
  int cg;
  DirectReference(KernelKey key, int cg) : ReferenceKernel(std::move(key)), cg(cg) {
    k.pipeline = Pipeline::Direct;
  }
  std::string is_supported(const ConvProblem& p, const RunOptions&) const override {
    if (p.ndim != k.ndim) return "ndim mismatch";
    if (p.C != cg || p.K != cg) return "direct serves C = K = Cg";
    return p.G * p.C % 4 == 0 ? "" : "vector width 4 needs G * C to be a multiple of 4";
  }
};

// The face's result against the reference on p, for variant v (over a direct instance of Cg
// channels per group when cg > 0).
std::string check_face(Variant v, const ConvProblem& p, uint32_t seed, int cg = 0) {
  ReferenceKernel plain(fp32_key("inner", v, p.ndim));
  DirectReference direct(fp32_key("inner", v, p.ndim), cg);
  ReferenceKernel& inner = cg > 0 ? direct : plain;
  ChannelPadKernel face(inner);
  if (std::string r = face.is_supported(p); !r.empty()) return "refused: " + r;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-3, 3);
  auto fill = [&](int64_t n) {
    std::vector<float> t(static_cast<size_t>(n));
    for (float& e : t) e = float(d(rng));
    return t;
  };
  std::vector<float> x = fill(p.input_elems()), w = fill(p.weight_elems()), y = fill(p.output_elems());
  std::vector<float>& out = v == Variant::Forward ? y : v == Variant::BackwardData ? x : w;
  auto dbl = [](const std::vector<float>& t) { return std::vector<double>(t.begin(), t.end()); };
  const std::vector<double> want = reference_cpu(v, p, dbl(x), dbl(w), dbl(y));
  std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
  std::vector<unsigned char> ws;
  void* base = garbage_workspace(ws, face.workspace_bytes(p));
  ConvTensors t;
  t.in = x.data(), t.wei = w.data(), t.out = y.data();
  if (face.run(p, t, base, nullptr) != gpuSuccess) return "run failed";
  if (cg > 0 ? inner.last.G * inner.last.C % 4 != 0 || inner.last.C != p.C || inner.last.G <= p.G
             : inner.last.C % 4 != 0 || inner.last.K % 4 != 0)
    return "inner ran unpadded channels";
  return first_mismatch(out, want);
}

}  // namespace

int main() {
  const Variant variants[] = {Variant::Forward, Variant::BackwardData, Variant::BackwardWeight};
  const ConvProblem problems[] = {
      make(2, 1, 2, 3, 8, 6, 3, 1),    // C odd (a stem)
      make(2, 1, 1, 8, 5, 5, 3, 2),    // K odd, stride 2
      make(2, 3, 2, 5, 7, 5, 3, 1),    // both, three groups
      make(1, 2, 2, 9, 6, 9, 5, 2),    // 1D
      make(3, 1, 1, 6, 3, 4, 3, 1),    // 3D
  };
  uint32_t seed = 1;
  for (Variant v : variants)
    for (const ConvProblem& p : problems) {
      const std::string r = check_face(v, p, seed++);
      check(r.empty(), (std::string("face equals the reference: ") + to_string(v) + " C=" + std::to_string(p.C) +
                        " K=" + std::to_string(p.K) + " G=" + std::to_string(p.G) + " " + std::to_string(p.ndim) + "D")
                           .c_str(),
            r);
    }

  // Direct instances: the group count grows (depthwise G = 7 -> 8, Cg = 2 with G = 5 -> 6).
  const ConvProblem direct_problems[] = {
      make(2, 7, 2, 1, 1, 6, 3, 1),  // depthwise
      make(2, 5, 1, 2, 2, 7, 5, 2),  // two channels a group, stride 2
      make(3, 3, 1, 1, 1, 4, 3, 1),  // 3D depthwise
      make(2, 5, 2, 1, 2, 6, 3, 1),  // channel multiplier 2: G * M = 10 -> 12 groups
      make(1, 4, 1, 1, 3, 9, 5, 2),  // multiplier 3, G * M = 12 whole vectors: the repeats alone
      make(3, 3, 1, 1, 2, 4, 3, 1),  // 3D, multiplier 2
  };
  for (Variant v : variants)
    for (const ConvProblem& p : direct_problems) {
      if (v == Variant::BackwardData && p.K > p.C) {  // a multiplier's dx would add rounded repeats
        const std::string r = check_face(v, p, seed++, int(p.C));
        check(r.find("refused: channel_pad: a channel multiplier") == 0, "multiplier backward_data refused",
              r);
        continue;
      }
      const std::string r = check_face(v, p, seed++, int(p.C));
      check(r.empty(),
            (std::string("face equals the reference: direct ") + to_string(v) + " C=" + std::to_string(p.C) +
             " K=" + std::to_string(p.K) + " G=" + std::to_string(p.G) + " " + std::to_string(p.ndim) + "D")
                .c_str(),
            r);
    }
  {
    DirectReference dw(fp32_key("dw", Variant::Forward, 2), 1);
    ChannelPadKernel dface(dw);
    check(!dface.is_supported(make(2, 12, 1, 1, 1, 6, 3, 1)).empty(),
          "direct face refuses G * C whole vectors");
    check(!dface.is_supported(make(2, 7, 1, 2, 2, 6, 3, 1)).empty(),
          "direct face refuses what its instance does");
  }

  ReferenceKernel inner(fp32_key("inner", Variant::Forward, 2));
  ChannelPadKernel face(inner);
  check(!face.is_supported(make(2, 1, 1, 8, 12, 5, 3, 1)).empty(), "face refuses whole vectors");
  check(face.name() == "inner_cpad" && face.key().channel_pad == 4, "face name and key");

  // Faces: plain split-K instances of whole vectors only.
  Registry reg;
  reg.add(std::make_unique<FakeKernel>(fake_key("v8", Variant::Forward, 128, 128, 32), 8));
  KernelKey v1 = fake_key("v1", Variant::Forward, 64, 64, 32);
  v1.vec_a = v1.vec_b = v1.vec_c = 1;
  v1.pipeline = Pipeline::Basic;
  reg.add(std::make_unique<FakeKernel>(v1));
  KernelKey fused = fake_key("v8_bias", Variant::Forward, 128, 128, 32);
  fused.channel_op = ChannelOp::Bias;
  reg.add(std::make_unique<FakeKernel>(fused, 8));
  KernelKey sk = fake_key("v8_sk", Variant::BackwardWeight, 128, 128, 32);
  sk.reduction = Reduction::StreamKLinear;
  reg.add(std::make_unique<FakeKernel>(sk, 8));
  KernelKey dmma = fake_key("direct_mma", Variant::Forward, 32, 64, 8);
  dmma.pipeline = Pipeline::Direct;
  dmma.warp_m = 16;
  reg.add(std::make_unique<FakeKernel>(dmma, 8));
  KernelKey dfma = dmma;
  dfma.name = "direct_fma";
  dfma.warp_m = dfma.warp_n = dfma.warp_k = 1;
  dfma.tile_k = 1;
  reg.add(std::make_unique<FakeKernel>(dfma, 8));
  add_channel_pad_faces(reg);
  check(
      reg.all().size() == 8 && reg.all()[6]->name() == "v8_cpad" && reg.all()[7]->name() == "direct_fma_cpad",
      "faces for the plain split-K v8 instance and the direct FMA one (none for the direct matrix path)",
      std::to_string(reg.all().size()));

  // The dispatcher prices the face as the v8 instance on the padded problem plus the copies, and
  // picks it over the scalar instance on a large odd-channel layer.
  const ConvProblem odd = make(2, 1, 32, 921, 512, 14, 3, 1);
  Dispatcher disp(reg);
  const Selection s = disp.select(odd, DataType::FP16, Variant::Forward);
  check(s && s.kernel->name() == "v8_cpad", "the face is picked for C = 921", s ? s.kernel->name() : s.why);
  const ChannelPadPlan plan = channel_pad_plan(Variant::Forward, odd, 8);
  const double inner_us = estimate_cost(reg.all()[0]->key(), plan.padded, 0).us;
  const double face_us = estimate_cost(reg.all()[6]->key(), odd, 0).us;
  check(face_us > inner_us && face_us < inner_us + 20.0, "face estimate = padded instance + copies",
        std::to_string(inner_us) + " / " + std::to_string(face_us));
  std::printf("all passed\n");
  return 0;
}
