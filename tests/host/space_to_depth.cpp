// Space-to-depth faces (kernel/space_to_depth.hpp) without a GPU: the inner instance is the fake
// fp32 reference instance (reference_kernel.hpp). Through its face, a strided problem with few
// channels must give the reference of the user's problem exactly (output poisoned, workspace
// garbage), in 1D, 2D and 3D, with groups, odd filters, asymmetric pads and one strided dimension
// of several; the inner instance must run the stride-1 problem. The face refuses unit stride,
// dilated strided dimensions and too many packed channels; only forward split-K instances of
// whole vectors get one; the cost model prices it as its instance on the stride-1 problem plus
// the copies.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ckgen/kernel/space_to_depth.hpp"
#include "reference_kernel.hpp"

using namespace ckgen_test;

namespace {

std::string check_face(const ConvProblem& p, uint32_t seed) {
  ReferenceKernel inner(fp32_key("inner", Variant::Forward, p.ndim));
  SpaceToDepthKernel face(inner);
  if (std::string r = face.is_supported(p); !r.empty()) return "refused: " + r;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-3, 3);
  auto fill = [&](int64_t n) {
    std::vector<float> t(static_cast<size_t>(n));
    for (float& e : t) e = float(d(rng));
    return t;
  };
  std::vector<float> x = fill(p.input_elems()), w = fill(p.weight_elems());
  std::vector<float> y(size_t(p.output_elems()), std::numeric_limits<float>::quiet_NaN());
  auto dbl = [](const std::vector<float>& t) { return std::vector<double>(t.begin(), t.end()); };
  const std::vector<double> want = reference_cpu(Variant::Forward, p, dbl(x), dbl(w), {});
  std::vector<unsigned char> ws;
  void* base = garbage_workspace(ws, face.workspace_bytes(p));
  ConvTensors t;
  t.in = x.data(), t.wei = w.data(), t.out = y.data();
  if (face.run(p, t, base, nullptr) != gpuSuccess) return "run failed";
  for (int i = 0; i < 3; ++i)
    if (inner.last.stride[i] != 1 || inner.last.out[i] != p.out[i])
      return "inner ran another output or a stride";
  if (inner.last.C % 4 != 0) return "inner ran unpadded channels";
  return first_mismatch(y, want);
}

ConvProblem with(ConvProblem p, int d, int64_t in, int64_t f, int64_t s, int64_t pl, int64_t pr) {
  p.in[d] = in, p.filter[d] = f, p.stride[d] = s, p.pad_l[d] = pl, p.pad_r[d] = pr;
  p.compute_output();
  return p;
}

}  // namespace

int main() {
  const ConvProblem stem = make(2, 1, 2, 3, 8, 15, 7, 2);  // 7x7 stride 2 pad 3, C = 3
  const ConvProblem problems[] = {
      stem,
      make(2, 1, 1, 3, 8, 12, 3, 2),                           // 3x3 stride 2, even input
      make(2, 2, 2, 2, 4, 9, 5, 3),                            // stride 3, groups
      make(1, 1, 2, 3, 4, 20, 7, 2),                           // 1D
      make(3, 1, 1, 1, 4, 7, 3, 2),                            // 3D
      with(with(stem, 1, 11, 4, 2, 0, 3), 2, 13, 3, 1, 1, 1),  // stride along H only, even filter
      with(stem, 2, 14, 6, 3, 2, 0),                           // W stride 3, asymmetric pads
  };
  uint32_t seed = 1;
  for (const ConvProblem& p : problems) {
    const std::string r = check_face(p, seed++);
    check(r.empty(),
          ("face equals the reference: C=" + std::to_string(p.C) + " G=" + std::to_string(p.G) + " " +
           std::to_string(p.ndim) + "D stride " + std::to_string(p.stride[1]) + "x" +
           std::to_string(p.stride[2]))
              .c_str(),
          r);
  }

  ReferenceKernel inner(fp32_key("inner", Variant::Forward, 2));
  SpaceToDepthKernel face(inner);
  check(face.name() == "inner_s2d" && face.key().space_to_depth, "face name and key");
  check(!face.is_supported(make(2, 1, 1, 3, 8, 12, 3, 1)).empty(), "face refuses stride 1");
  check(!face.is_supported(make(2, 1, 1, 16, 8, 12, 3, 2)).empty(), "face refuses 64 packed channels");
  ConvProblem dil = stem;
  dil.dilation[1] = 2;
  dil.compute_output();
  check(!face.is_supported(dil).empty(), "face refuses a dilated strided dimension");
  const SpaceToDepthPlan pl = space_to_depth_plan(stem, 8);
  check(pl.inner.C == 16 && pl.inner.filter[1] == 4 && pl.inner.in[1] == stem.out[1] + 3 && pl.packed == 12,
        "7x7 stride 2, C = 3: 4x4 taps over 16 channels");

  // Faces: forward split-K instances of whole vectors only (fused ones too: the output is the user's).
  Registry reg;
  reg.add(std::make_unique<FakeKernel>(fake_key("v8", Variant::Forward, 128, 128, 32), 8));
  KernelKey v1 = fake_key("v1", Variant::Forward, 64, 64, 32);
  v1.vec_a = v1.vec_b = v1.vec_c = 1;
  v1.pipeline = Pipeline::Basic;
  reg.add(std::make_unique<FakeKernel>(v1));
  KernelKey bwd = fake_key("v8_bwd", Variant::BackwardData, 128, 128, 32);
  reg.add(std::make_unique<FakeKernel>(bwd, 8));
  KernelKey fused = fake_key("v8_bias", Variant::Forward, 128, 128, 32);
  fused.channel_op = ChannelOp::Bias;
  reg.add(std::make_unique<FakeKernel>(fused, 8));
  add_space_to_depth_faces(reg);
  check(reg.all().size() == 6 && reg.all()[4]->name() == "v8_s2d" && reg.all()[5]->name() == "v8_bias_s2d",
        "faces for the forward instances of whole vectors", std::to_string(reg.all().size()));
  KernelKey twin = reg.all()[5]->key();
  check(plain_twin_name(twin) == "v8_s2d", "a fused face's plain twin is the plain face",
        plain_twin_name(twin));

  // The cost model: the instance on the stride-1 problem plus the copies.
  const ConvProblem big = make(2, 1, 32, 3, 64, 224, 7, 2);
  const double inner_us = estimate_cost(reg.all()[0]->key(), space_to_depth_plan(big, 8).inner, 0).us;
  const double face_us = estimate_cost(reg.all()[4]->key(), big, 0).us;
  check(face_us > inner_us && face_us < inner_us + 100.0, "face estimate = stride-1 instance + copies",
        std::to_string(inner_us) + " / " + std::to_string(face_us));
  std::printf("all passed\n");
  return 0;
}
