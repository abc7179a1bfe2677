// The fake fp32 instance of the host-only face checks (channel_pad.cpp, mask_copy.cpp): it
// computes the fp64 reference of whatever problem it is given, refuses channels that are not
// whole 4-element vectors, and records the problem it last ran.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "fake_dispatch.hpp"

namespace ckgen_test {

// The plain loops of a grouped convolution (layouts of core/problem.hpp): forward writes y,
// backward_data dx, backward_weight dw; the written tensor is returned.
inline std::vector<double> reference_cpu(Variant v, const ConvProblem& p, const std::vector<double>& x,
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

inline KernelKey fp32_key(const std::string& name, Variant v, int ndim) {
  KernelKey k = fake_key(name, v, 64, 64, 16);
  k.datatype = k.out_datatype = DataType::FP32;
  k.ndim = ndim;
  k.vec_a = k.vec_b = k.vec_c = 4;
  return k;
}

inline ConvProblem make(int ndim, int64_t G, int64_t N, int64_t C, int64_t K, int64_t in, int64_t f, int64_t s) {
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

// A workspace of `bytes` filled with garbage (the face's copies must write every element they
// read back), 256-byte aligned within ws.
inline void* garbage_workspace(std::vector<unsigned char>& ws, std::size_t bytes) {
  ws.assign(bytes + 256, 0x7f);
  return ws.data() + (256 - reinterpret_cast<uintptr_t>(ws.data()) % 256) % 256;
}

// "" when out equals want element by element, else the first difference.
inline std::string first_mismatch(const std::vector<float>& out, const std::vector<double>& want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (double(out[i]) != want[i])
      return "element " + std::to_string(i) + ": " + std::to_string(out[i]) + " != " + std::to_string(want[i]);
  return {};
}

}  // namespace ckgen_test
