// Channel-padding faces (kernel/channel_pad.hpp) without a GPU: the inner instance is a fake fp32
// instance of 4-element vectors that computes the fp64 reference on whatever problem it is given
// and refuses channels that are not whole vectors. Through its face, every variant must give the
// reference of the user's (unpadded) problem exactly, with a poisoned output and garbage in the
// workspace; the face refuses problems its inner instance runs itself, the registry gives faces
// only to plain split-K instances of whole vectors, and the cost model prices a face as its
// instance on the padded problem plus the copies.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "ckgen/kernel/channel_pad.hpp"
#include "fake_dispatch.hpp"

using namespace ckgen_test;

namespace {

// The plain loops of a grouped convolution (layouts of core/problem.hpp): forward writes y,
// backward_data dx, backward_weight dw; the written tensor is returned.
std::vector<double> reference_cpu(Variant v, const ConvProblem& p, const std::vector<double>& x,
                                  const std::vector<double>& w, const std::vector<double>& y) {
  std::vector<double> r(static_cast<size_t>(written_elems(v, p)), 0.0);
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t od = 0; od < p.out[0]; ++od)
      for (int64_t oh = 0; oh < p.out[1]; ++oh)
        for (int64_t ow = 0; ow < p.out[2]; ++ow)
          for (int64_t g = 0; g < p.G; ++g)
            for (int64_t k = 0; k < p.K; ++k)
              for (int64_t z = 0; z < p.filter[0]; ++z)
                for (int64_t fy = 0; fy < p.filter[1]; ++fy)
                  for (int64_t fx = 0; fx < p.filter[2]; ++fx) {
                    const int64_t id = od * p.stride[0] - p.pad_l[0] + z * p.dilation[0];
                    const int64_t ih = oh * p.stride[1] - p.pad_l[1] + fy * p.dilation[1];
                    const int64_t iw = ow * p.stride[2] - p.pad_l[2] + fx * p.dilation[2];
                    if (id < 0 || ih < 0 || iw < 0 || id >= p.in[0] || ih >= p.in[1] || iw >= p.in[2]) continue;
                    const int64_t yi = ((((n * p.out[0] + od) * p.out[1] + oh) * p.out[2] + ow) * p.G + g) * p.K + k;
                    for (int64_t c = 0; c < p.C; ++c) {
                      const int64_t xi = ((((n * p.in[0] + id) * p.in[1] + ih) * p.in[2] + iw) * p.G + g) * p.C + c;
                      const int64_t wi = ((((g * p.K + k) * p.filter[0] + z) * p.filter[1] + fy) * p.filter[2] + fx) * p.C + c;
                      if (v == Variant::Forward) r[size_t(yi)] += x[size_t(xi)] * w[size_t(wi)];
                      if (v == Variant::BackwardData) r[size_t(xi)] += y[size_t(yi)] * w[size_t(wi)];
                      if (v == Variant::BackwardWeight) r[size_t(wi)] += y[size_t(yi)] * x[size_t(xi)];
                    }
                  }
  return r;
}

struct ReferenceKernel : KernelBase {
  KernelKey k;
  mutable ConvProblem last{};
  explicit ReferenceKernel(KernelKey key) : k(std::move(key)) {}
  const KernelKey& key() const override { return k; }
  std::string is_supported(const ConvProblem& p, const RunOptions&) const override {
    if (p.ndim != k.ndim) return "ndim mismatch";
    return p.C % 4 == 0 && p.K % 4 == 0 ? "" : "vector width 4 needs C and K to be multiples of 4";
  }
  std::size_t workspace_bytes(const ConvProblem&, const RunOptions&) const override { return 64; }
  gpuError_t run(const ConvProblem& p, const ConvTensors& t, void* ws, gpuStream_t, const RunOptions&) const override {
    last = p;
    std::memset(ws, 0xff, 64);  // its own workspace: must not overlap the padded tensors
    auto vec = [](const void* ptr, int64_t n) {
      std::vector<double> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = static_cast<const float*>(ptr)[i];
      return v;
    };
    const Variant v = k.variant;
    const std::vector<double> x = v == Variant::BackwardData ? std::vector<double>{} : vec(t.in, p.input_elems());
    const std::vector<double> w = v == Variant::BackwardWeight ? std::vector<double>{} : vec(t.wei, p.weight_elems());
    const std::vector<double> y = v == Variant::Forward ? std::vector<double>{} : vec(t.out, p.output_elems());
    const std::vector<double> r = reference_cpu(v, p, x, w, y);
    float* dst = static_cast<float*>(v == Variant::Forward ? t.out : v == Variant::BackwardData ? t.in : t.wei);
    for (size_t i = 0; i < r.size(); ++i) dst[i] = float(r[i]);
    return gpuSuccess;
  }
};

KernelKey fp32_key(const std::string& name, Variant v, int ndim) {
  KernelKey k = fake_key(name, v, 64, 64, 16);
  k.datatype = k.out_datatype = DataType::FP32;
  k.ndim = ndim;
  k.vec_a = k.vec_b = k.vec_c = 4;
  return k;
}

ConvProblem make(int ndim, int64_t G, int64_t N, int64_t C, int64_t K, int64_t in, int64_t f, int64_t s) {
  ConvProblem p;
  p.ndim = ndim;
  p.G = G, p.N = N, p.C = C, p.K = K;
  for (int i = 3 - ndim; i < 3; ++i) {
    p.in[i] = in;
    p.filter[i] = f;
    p.stride[i] = s;
    p.pad_l[i] = p.pad_r[i] = f / 2;
  }
  p.compute_output();
  return p;
}

// The face's result against the reference on p, for variant v.
std::string check_face(Variant v, const ConvProblem& p, uint32_t seed) {
  ReferenceKernel inner(fp32_key("inner", v, p.ndim));
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
  std::vector<unsigned char> ws(face.workspace_bytes(p) + 256);
  std::memset(ws.data(), 0x7f, ws.size());  // garbage: the copies must write every padded element
  void* base = ws.data() + (256 - reinterpret_cast<uintptr_t>(ws.data()) % 256) % 256;
  ConvTensors t;
  t.in = x.data(), t.wei = w.data(), t.out = y.data();
  if (face.run(p, t, base, nullptr) != gpuSuccess) return "run failed";
  if (inner.last.C % 4 != 0 || inner.last.K % 4 != 0) return "inner ran unpadded channels";
  for (size_t i = 0; i < want.size(); ++i)
    if (double(out[i]) != want[i])
      return "element " + std::to_string(i) + ": " + std::to_string(out[i]) + " != " + std::to_string(want[i]);
  return {};
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
  add_channel_pad_faces(reg);
  check(reg.all().size() == 5 && reg.all()[4]->name() == "v8_cpad", "one face, for the plain split-K v8 instance",
        std::to_string(reg.all().size()));

  // The dispatcher prices the face as the v8 instance on the padded problem plus the copies, and
  // picks it over the scalar instance on a large odd-channel layer.
  const ConvProblem odd = make(2, 1, 32, 921, 512, 14, 3, 1);
  Dispatcher disp(reg);
  const Selection s = disp.select(odd, DataType::FP16, Variant::Forward);
  check(s && s.kernel->name() == "v8_cpad", "the face is picked for C = 921", s ? s.kernel->name() : s.why);
  const ChannelPadPlan plan = channel_pad_plan(Variant::Forward, odd, 8);
  const double inner_us = estimate_cost(reg.all()[0]->key(), plan.padded, 0).us;
  const double face_us = estimate_cost(reg.all()[4]->key(), odd, 0).us;
  check(face_us > inner_us && face_us < inner_us + 20.0, "face estimate = padded instance + copies",
        std::to_string(inner_us) + " / " + std::to_string(face_us));
  std::printf("all passed\n");
  return 0;
}
