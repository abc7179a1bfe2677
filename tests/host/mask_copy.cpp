// Mask-copy faces (kernel/mask_copy.hpp) without a GPU: the inner instance is the fake fp32
// reference instance (reference_kernel.hpp). Through its face, backward_data and backward_weight
// with each gradient mask must give the reference of dy times the mask of y exactly, with a
// poisoned output and garbage in the workspace; the face refuses what its instance refuses and a
// call without y; the registry gives faces only to plain backward instances and none whose name a
// fused twin has; the cost model prices a face as its instance plus the copy, and the dispatcher
// answers a masked request with a face where no fused instance serves it.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ckgen/kernel/channel_pad.hpp"
#include "ckgen/kernel/mask_copy.hpp"
#include "reference_kernel.hpp"

using namespace ckgen_test;

namespace {

constexpr float kAlpha = 0.25f;

double mask_of(Activation a, double y) {
  if (a == Activation::DRelu) return y > 0 ? 1.0 : 0.0;
  if (a == Activation::DRelu6) return y > 0 && y < 6 ? 1.0 : 0.0;
  return y > 0 ? 1.0 : double(kAlpha);
}

// The face's result against the reference of the masked dy on p, for variant v and mask a.
std::string check_face(Variant v, Activation a, const ConvProblem& p, uint32_t seed) {
  ReferenceKernel inner(fp32_key("inner", v, p.ndim));
  MaskCopyKernel face(inner, a);
  if (std::string r = face.is_supported(p); !r.empty()) return "refused: " + r;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> d(-3, 3);
  const float ys[] = {-1.f, 0.f, 0.5f, 3.f, 6.f, 7.f};
  std::uniform_int_distribution<int> yi(0, 5);
  auto fill = [&](int64_t n) {
    std::vector<float> t(static_cast<size_t>(n));
    for (float& e : t) e = float(d(rng));
    return t;
  };
  std::vector<float> x = fill(p.input_elems()), w = fill(p.weight_elems()), dy = fill(p.output_elems());
  std::vector<float> y(dy.size());
  for (float& e : y) e = ys[yi(rng)];
  std::vector<double> g(dy.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = double(dy[i]) * mask_of(a, double(y[i]));
  std::vector<float>& out = v == Variant::BackwardData ? x : w;
  const std::vector<double> want =
      reference_cpu(v, p, std::vector<double>(x.begin(), x.end()), std::vector<double>(w.begin(), w.end()), g);
  std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());
  std::vector<unsigned char> ws;
  void* base = garbage_workspace(ws, face.workspace_bytes(p));
  ConvTensors t;
  t.in = x.data(), t.wei = w.data(), t.out = dy.data();
  t.ep.alpha = kAlpha;
  if (face.run(p, t, base, nullptr) == gpuSuccess) return "ran without y";
  t.ep.y = y.data();
  if (face.run(p, t, base, nullptr) != gpuSuccess) return "run failed";
  return first_mismatch(out, want);
}

}  // namespace

int main() {
  const Variant variants[] = {Variant::BackwardData, Variant::BackwardWeight};
  const ConvProblem problems[] = {
      make(2, 1, 2, 8, 12, 6, 3, 1),  // 3x3
      make(2, 2, 1, 4, 8, 7, 3, 2),   // two groups, stride 2
      make(1, 1, 2, 8, 4, 9, 5, 1),   // 1D
      make(3, 1, 1, 4, 4, 4, 3, 1),   // 3D
  };
  uint32_t seed = 1;
  for (Variant v : variants)
    for (Activation a : kMaskCopyMasks)
      for (const ConvProblem& p : problems) {
        const std::string r = check_face(v, a, p, seed++);
        check(r.empty(), (std::string("face equals the reference: ") + to_string(v) + " " + to_string(a) + " " +
                          std::to_string(p.ndim) + "D G=" + std::to_string(p.G))
                             .c_str(),
              r);
      }

  ReferenceKernel inner(fp32_key("inner", Variant::BackwardData, 2));
  MaskCopyKernel face(inner, Activation::DLeakyRelu);
  check(face.name() == "inner_dlrelu" && face.key().mask_copy && face.key().activation == Activation::DLeakyRelu,
        "face name and key", face.name());
  check(face.is_supported(make(2, 1, 1, 6, 8, 5, 3, 1)) == inner.is_supported(make(2, 1, 1, 6, 8, 5, 3, 1), {}) &&
            !face.is_supported(make(2, 1, 1, 6, 8, 5, 3, 1)).empty(),
        "face refuses what its instance refuses");

  // Faces: three for each plain backward instance, none for forward, fused or channel-padding
  // ones, and none whose name a registered fused twin has.
  Registry reg;
  reg.add(std::make_unique<FakeKernel>(fake_key("d8", Variant::BackwardData, 128, 128, 32), 8));
  reg.add(std::make_unique<FakeKernel>(fake_key("w8", Variant::BackwardWeight, 128, 128, 32), 8));
  reg.add(std::make_unique<FakeKernel>(fake_key("f8", Variant::Forward, 128, 128, 32), 8));
  KernelKey twin = fake_key("w8_drelu", Variant::BackwardWeight, 128, 128, 32);
  twin.activation = Activation::DRelu;
  reg.add(std::make_unique<FakeKernel>(twin, 8));
  KernelKey cpad = fake_key("d8_cpad", Variant::BackwardData, 128, 128, 32);
  cpad.channel_pad = 8;
  reg.add(std::make_unique<FakeKernel>(cpad));
  add_mask_copy_faces(reg);
  std::string names;
  for (std::size_t i = 5; i < reg.all().size(); ++i) names += reg.all()[i]->name() + " ";
  check(names == "d8_drelu d8_drelu6 d8_dlrelu w8_drelu6 w8_dlrelu ", "faces of the plain backward instances",
        names);

  // The cost model prices a face as its instance plus the copy (three passes over dy); the
  // dispatcher answers a drelu backward_data request with d8's face (no fused instance serves it).
  const ConvProblem big = make(2, 1, 32, 256, 256, 28, 3, 1);
  const double inner_us = estimate_cost(reg.all()[0]->key(), big, 0).us;
  const double face_us = estimate_cost(reg.all()[5]->key(), big, 0).us;
  const double copy_us = 3.0 * double(big.output_elems()) * 2 / (ArchNumbers{}.bandwidth_gbs * 1e9) * 1e6;
  check(std::fabs(face_us - inner_us - copy_us - kPadLaunchUs) < 1e-6, "face estimate = instance + copy",
        std::to_string(inner_us) + " / " + std::to_string(face_us));
  // wavelet_tma's masked backward_data twin: priced as its unmasked twin plus the copy where it
  // masks a copy of dy (tma_phases::premask_dy: 2 column tiles x 9 taps read a dy tile 18 times),
  // with the mask in the kernel (not the copy) where each dy tile is read once.
  KernelKey tma = fake_key("t_drelu", Variant::BackwardData, 128, 128, 64);
  tma.pipeline = Pipeline::WaveletTma;
  tma.activation = Activation::DRelu;
  KernelKey tma_plain = tma;
  tma_plain.activation = Activation::Identity;
  check(tma_phases::premask_dy(big, 128) && runs_mask_copy(tma, big), "a re-read dy tile: the copy");
  const double tma_us = estimate_cost(tma, big, 1).us, tma_plain_us = estimate_cost(tma_plain, big, 1).us;
  check(std::fabs(tma_us - tma_plain_us - copy_us - kPadLaunchUs) < 1e-6, "premasked twin = unmasked + copy",
        std::to_string(tma_plain_us) + " / " + std::to_string(tma_us));
  const ConvProblem once = make(2, 1, 32, 128, 256, 28, 1, 1);
  check(!tma_phases::premask_dy(once, 128) && !runs_mask_copy(tma, once), "a dy tile read once: the kernel");
  ConvProblem odd = once;
  odd.K = 36;
  check(tma_phases::premask_dy(odd, 128), "dy's padded rows: the copy");
  Dispatcher disp(reg);
  const EpilogueOps drelu{ChannelOp::Identity, Activation::DRelu, false, false, 0};
  const Selection s = disp.select(big, DataType::FP16, Variant::BackwardData, drelu);
  check(s && s.kernel->name() == "d8_drelu", "a drelu request gets the face", s ? s.kernel->name() : s.why);
  const Selection sw = disp.select(big, DataType::FP16, Variant::BackwardWeight, drelu);
  check(sw && sw.kernel->name() == "w8_drelu" && !sw.kernel->key().mask_copy, "the fused twin, not a face",
        sw ? sw.kernel->name() : sw.why);
  std::printf("all passed\n");
  return 0;
}
