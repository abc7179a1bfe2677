// Reference convolutions, written as direct convolution (not implicit GEMM):
//
//   reference_cpu  fp64, multi-threaded, for small problems. One loop nest per variant, in
//                  "forward gather" form: for every output position and filter tap find the
//                  input position; backward_data scatters into dx, backward_weight gathers
//                  over the batch/output positions.
//   reference_gpu  fp32 accumulation on the GPU, naive, for large problems:
//                  forward         one thread per y element (loop taps, then C)
//                  backward_data   one thread per dx element; loops over filter taps and finds
//                                  the output position with the stride divisibility check
//                  backward_weight one 128-thread block per dw element, block reduction over
//                                  N*Do*Ho*Wo
//
// All: any ndim (problem held as 3D), strides, dilations, asymmetric pads, groups.
// Layouts: x N,Di,Hi,Wi,G,C   w G,K,Z,Y,X,C   y N,Do,Ho,Wo,G,K.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

#include "ckgen/host/common.hpp"
#include "ckgen/host/init.hpp"
#include "ckgen/core/problem.hpp"

namespace ckgen::host {

// Flat offsets in the three layouts.
CKGEN_HOST_DEVICE inline int64_t x_offset(const ConvProblem& p, int64_t n, int64_t d, int64_t h,
                                          int64_t w, int64_t g, int64_t c) {
  return ((((n * p.in[0] + d) * p.in[1] + h) * p.in[2] + w) * p.G + g) * p.C + c;
}
CKGEN_HOST_DEVICE inline int64_t w_offset(const ConvProblem& p, int64_t g, int64_t k, int64_t z,
                                          int64_t y, int64_t x, int64_t c) {
  return ((((g * p.K + k) * p.filter[0] + z) * p.filter[1] + y) * p.filter[2] + x) * p.C + c;
}
CKGEN_HOST_DEVICE inline int64_t y_offset(const ConvProblem& p, int64_t n, int64_t d, int64_t h,
                                          int64_t w, int64_t g, int64_t k) {
  return ((((n * p.out[0] + d) * p.out[1] + h) * p.out[2] + w) * p.G + g) * p.K + k;
}

inline const char* written_tensor_name(Variant v) {
  switch (v) {
    case Variant::Forward: return "y";
    case Variant::BackwardData: return "dx";
    case Variant::BackwardWeight: return "dw";
  }
  return "?";
}

// "y[n=0,d=0,h=3,w=4,g=1,k=7]" for a flat index of the written tensor (spatial dims per ndim).
inline std::string describe_index(Variant v, const ConvProblem& p, int64_t idx) {
  const char* sp[3] = {"d", "h", "w"};
  const char* fs[3] = {"z", "y", "x"};
  std::ostringstream os;
  os << written_tensor_name(v) << '[';
  auto spatial = [&](const int64_t dims[3], const char* const names[3], int64_t& rest) {
    int64_t coord[3];
    for (int i = 2; i >= 0; --i) {
      coord[i] = rest % dims[i];
      rest /= dims[i];
    }
    std::string s;
    for (int i = 3 - p.ndim; i < 3; ++i) s += std::string(names[i]) + "=" + std::to_string(coord[i]) + ",";
    return s;
  };
  int64_t r = idx;
  if (v == Variant::BackwardWeight) {
    const int64_t c = r % p.C;
    r /= p.C;
    int64_t rest = r;
    // rest = (g*K + k)*ZYX + t
    const int64_t t = rest % p.filter_spatial();
    const int64_t gk = rest / p.filter_spatial();
    int64_t tt = t;
    const std::string taps = spatial(p.filter, fs, tt);
    os << "g=" << gk / p.K << ",k=" << gk % p.K << "," << taps << "c=" << c;
  } else {
    const int64_t last = v == Variant::Forward ? p.K : p.C;
    const int64_t ch = r % last;
    r /= last;
    const int64_t g = r % p.G;
    r /= p.G;
    const int64_t* dims = v == Variant::Forward ? p.out : p.in;
    const int64_t sp_total = dims[0] * dims[1] * dims[2];
    int64_t s = r % sp_total;
    const int64_t n = r / sp_total;
    const std::string pos = spatial(dims, sp, s);
    os << "n=" << n << "," << pos << "g=" << g << "," << (v == Variant::Forward ? "k=" : "c=") << ch;
  }
  os << ']';
  return os.str();
}

// ------------------------------------------------------------------------------------------
// CPU fp64 reference
// ------------------------------------------------------------------------------------------
// Runs f(u) for u in [0, units) on up to hardware_concurrency threads.
template <typename F>
void parallel_for(int64_t units, F f) {
  unsigned nt = std::thread::hardware_concurrency();
  if (nt == 0) nt = 1;
  if (int64_t(nt) > units) nt = unsigned(units < 1 ? 1 : units);
  if (nt <= 1) {
    for (int64_t u = 0; u < units; ++u) f(u);
    return;
  }
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; ++t)
    pool.emplace_back([&] {
      for (int64_t u; (u = next.fetch_add(1)) < units;) f(u);
    });
  for (auto& th : pool) th.join();
}

// x, w, y: the tensors in fp64 (the one the variant writes is ignored and may be empty).
// Returns the written tensor (y, dx or dw) in fp64.
inline std::vector<double> reference_cpu(Variant v, const ConvProblem& p,
                                         const std::vector<double>& x,
                                         const std::vector<double>& w,
                                         const std::vector<double>& y) {
  std::vector<double> r(size_t(written_elems(v, p)), 0.0);
  const int64_t* Fs = p.filter;
  const int64_t* O = p.out;
  const int64_t* I = p.in;
  // Input coordinate of output position o and tap t in dim i; -1 if in the padding.
  auto in_coord = [&](int i, int64_t o, int64_t t) {
    const int64_t c = o * p.stride[i] - p.pad_l[i] + t * p.dilation[i];
    return (c >= 0 && c < I[i]) ? c : int64_t(-1);
  };
  // Loops over output positions and filter taps of image n, calling f(od,oh,ow, z,y,x, id,ih,iw)
  // for every tap that lands inside the input.
  auto for_each_tap = [&](auto&& f) {
    for (int64_t od = 0; od < O[0]; ++od)
      for (int64_t oh = 0; oh < O[1]; ++oh)
        for (int64_t ow = 0; ow < O[2]; ++ow)
          for (int64_t z = 0; z < Fs[0]; ++z) {
            const int64_t id = in_coord(0, od, z);
            if (id < 0) continue;
            for (int64_t yy = 0; yy < Fs[1]; ++yy) {
              const int64_t ih = in_coord(1, oh, yy);
              if (ih < 0) continue;
              for (int64_t xx = 0; xx < Fs[2]; ++xx) {
                const int64_t iw = in_coord(2, ow, xx);
                if (iw < 0) continue;
                f(od, oh, ow, z, yy, xx, id, ih, iw);
              }
            }
          }
  };
  switch (v) {
    case Variant::Forward:
      // Units (g, k): each writes y[:, :, g, k] only.
      parallel_for(p.G * p.K, [&](int64_t u) {
        const int64_t g = u / p.K, k = u % p.K;
        for (int64_t n = 0; n < p.N; ++n)
          for_each_tap([&](int64_t od, int64_t oh, int64_t ow, int64_t z, int64_t yy, int64_t xx,
                           int64_t id, int64_t ih, int64_t iw) {
            double acc = 0;
            const double* xp = &x[size_t(x_offset(p, n, id, ih, iw, g, 0))];
            const double* wp = &w[size_t(w_offset(p, g, k, z, yy, xx, 0))];
            for (int64_t c = 0; c < p.C; ++c) acc += xp[c] * wp[c];
            r[size_t(y_offset(p, n, od, oh, ow, g, k))] += acc;
          });
      });
      break;
    case Variant::BackwardData:
      // Units (g, n): each writes dx[n, :, g, :] only.
      parallel_for(p.G * p.N, [&](int64_t u) {
        const int64_t g = u / p.N, n = u % p.N;
        for_each_tap([&](int64_t od, int64_t oh, int64_t ow, int64_t z, int64_t yy, int64_t xx,
                         int64_t id, int64_t ih, int64_t iw) {
          double* dxp = &r[size_t(x_offset(p, n, id, ih, iw, g, 0))];
          for (int64_t k = 0; k < p.K; ++k) {
            const double dy = y[size_t(y_offset(p, n, od, oh, ow, g, k))];
            const double* wp = &w[size_t(w_offset(p, g, k, z, yy, xx, 0))];
            for (int64_t c = 0; c < p.C; ++c) dxp[c] += dy * wp[c];
          }
        });
      });
      break;
    case Variant::BackwardWeight:
      // Units (g, k): each writes dw[g, k, :, :] only.
      parallel_for(p.G * p.K, [&](int64_t u) {
        const int64_t g = u / p.K, k = u % p.K;
        for (int64_t n = 0; n < p.N; ++n)
          for_each_tap([&](int64_t od, int64_t oh, int64_t ow, int64_t z, int64_t yy, int64_t xx,
                           int64_t id, int64_t ih, int64_t iw) {
            const double dy = y[size_t(y_offset(p, n, od, oh, ow, g, k))];
            const double* xp = &x[size_t(x_offset(p, n, id, ih, iw, g, 0))];
            double* dwp = &r[size_t(w_offset(p, g, k, z, yy, xx, 0))];
            for (int64_t c = 0; c < p.C; ++c) dwp[c] += dy * xp[c];
          });
      });
      break;
  }
  return r;
}

// ------------------------------------------------------------------------------------------
// GPU fp32 reference (independent of the implicit-GEMM kernels)
// ------------------------------------------------------------------------------------------
// One output element each; __host__ __device__ so the host can emulate the GPU reference.
template <DataType DT>
CKGEN_HOST_DEVICE inline float ref_forward_elem(const ConvProblem& p, const void* x, const void* w,
                                                int64_t idx) {
  int64_t r = idx;
  const int64_t k = r % p.K; r /= p.K;
  const int64_t g = r % p.G; r /= p.G;
  const int64_t ow = r % p.out[2]; r /= p.out[2];
  const int64_t oh = r % p.out[1]; r /= p.out[1];
  const int64_t od = r % p.out[0];
  const int64_t n = r / p.out[0];
  float acc = 0.f;
  for (int64_t z = 0; z < p.filter[0]; ++z) {
    const int64_t id = od * p.stride[0] + z * p.dilation[0] - p.pad_l[0];
    if (id < 0 || id >= p.in[0]) continue;
    for (int64_t yy = 0; yy < p.filter[1]; ++yy) {
      const int64_t ih = oh * p.stride[1] + yy * p.dilation[1] - p.pad_l[1];
      if (ih < 0 || ih >= p.in[1]) continue;
      for (int64_t xx = 0; xx < p.filter[2]; ++xx) {
        const int64_t iw = ow * p.stride[2] + xx * p.dilation[2] - p.pad_l[2];
        if (iw < 0 || iw >= p.in[2]) continue;
        const int64_t xb = x_offset(p, n, id, ih, iw, g, 0);
        const int64_t wb = w_offset(p, g, k, z, yy, xx, 0);
        for (int64_t c = 0; c < p.C; ++c)
          acc += Elem<DT>::load(x, xb + c) * Elem<DT>::load(w, wb + c);
      }
    }
  }
  return acc;
}

template <DataType DT>
CKGEN_HOST_DEVICE inline float ref_backward_data_elem(const ConvProblem& p, const void* dy,
                                                      const void* w, int64_t idx) {
  int64_t r = idx;
  const int64_t c = r % p.C; r /= p.C;
  const int64_t g = r % p.G; r /= p.G;
  const int64_t iw = r % p.in[2]; r /= p.in[2];
  const int64_t ih = r % p.in[1]; r /= p.in[1];
  const int64_t id = r % p.in[0];
  const int64_t n = r / p.in[0];
  float acc = 0.f;
  for (int64_t z = 0; z < p.filter[0]; ++z) {
    // id = od*s - pl + z*dil  <=>  od = (id + pl - z*dil) / s when divisible
    const int64_t td = id + p.pad_l[0] - z * p.dilation[0];
    if (td < 0 || td % p.stride[0] != 0) continue;
    const int64_t od = td / p.stride[0];
    if (od >= p.out[0]) continue;
    for (int64_t yy = 0; yy < p.filter[1]; ++yy) {
      const int64_t th = ih + p.pad_l[1] - yy * p.dilation[1];
      if (th < 0 || th % p.stride[1] != 0) continue;
      const int64_t oh = th / p.stride[1];
      if (oh >= p.out[1]) continue;
      for (int64_t xx = 0; xx < p.filter[2]; ++xx) {
        const int64_t tw = iw + p.pad_l[2] - xx * p.dilation[2];
        if (tw < 0 || tw % p.stride[2] != 0) continue;
        const int64_t ow = tw / p.stride[2];
        if (ow >= p.out[2]) continue;
        const int64_t yb = y_offset(p, n, od, oh, ow, g, 0);
        for (int64_t k = 0; k < p.K; ++k)
          acc += Elem<DT>::load(dy, yb + k) * Elem<DT>::load(w, w_offset(p, g, k, z, yy, xx, c));
      }
    }
  }
  return acc;
}

// Partial sum over reduction indices j = first, first+step, ... < N*Do*Ho*Wo of dw element idx.
template <DataType DT>
CKGEN_HOST_DEVICE inline float ref_backward_weight_partial(const ConvProblem& p, const void* dy,
                                                           const void* x, int64_t idx,
                                                           int64_t first, int64_t step) {
  int64_t r = idx;
  const int64_t c = r % p.C; r /= p.C;
  const int64_t xx = r % p.filter[2]; r /= p.filter[2];
  const int64_t yy = r % p.filter[1]; r /= p.filter[1];
  const int64_t z = r % p.filter[0]; r /= p.filter[0];
  const int64_t k = r % p.K;
  const int64_t g = r / p.K;
  const int64_t red = p.N * p.out_spatial();
  float acc = 0.f;
  auto body = [&](auto j) {
    using I = decltype(j);  // 32-bit index math when it fits (much cheaper division on GPUs)
    I q = j;
    const int64_t ow = int64_t(q % I(p.out[2])); q /= I(p.out[2]);
    const int64_t oh = int64_t(q % I(p.out[1])); q /= I(p.out[1]);
    const int64_t od = int64_t(q % I(p.out[0]));
    const int64_t n = int64_t(q / I(p.out[0]));
    const int64_t id = od * p.stride[0] + z * p.dilation[0] - p.pad_l[0];
    const int64_t ih = oh * p.stride[1] + yy * p.dilation[1] - p.pad_l[1];
    const int64_t iw = ow * p.stride[2] + xx * p.dilation[2] - p.pad_l[2];
    if (id < 0 || id >= p.in[0] || ih < 0 || ih >= p.in[1] || iw < 0 || iw >= p.in[2]) return;
    acc += Elem<DT>::load(dy, y_offset(p, n, od, oh, ow, g, k)) *
           Elem<DT>::load(x, x_offset(p, n, id, ih, iw, g, c));
  };
  if (red < (int64_t(1) << 31)) {
    for (int64_t j = first; j < red; j += step) body(uint32_t(j));
  } else {
    for (int64_t j = first; j < red; j += step) body(uint64_t(j));
  }
  return acc;
}

// Out is float (reference buffer) or the datatype itself (OutDT) when used as a stand-in kernel.
template <DataType DT, DataType OutDT>
CKGEN_GLOBAL void ref_forward_kernel(ConvProblem p, const void* x, const void* w, void* y) {
  const int64_t total = p.output_elems();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step)
    Elem<OutDT>::store(y, idx, ref_forward_elem<DT>(p, x, w, idx));
}

template <DataType DT, DataType OutDT>
CKGEN_GLOBAL void ref_backward_data_kernel(ConvProblem p, const void* dy, const void* w,
                                           void* dx) {
  const int64_t total = p.input_elems();
  const int64_t step = int64_t(gridDim.x) * blockDim.x;
  for (int64_t idx = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; idx < total; idx += step)
    Elem<OutDT>::store(dx, idx, ref_backward_data_elem<DT>(p, dy, w, idx));
}

constexpr int kRefBwdWeightBlock = 128;

template <DataType DT, DataType OutDT>
CKGEN_GLOBAL void ref_backward_weight_kernel(ConvProblem p, const void* dy, const void* x,
                                             void* dw) {
  __shared__ float partial[kRefBwdWeightBlock];
  const int64_t total = p.weight_elems();
  for (int64_t idx = blockIdx.x; idx < total; idx += gridDim.x) {
    partial[threadIdx.x] =
        ref_backward_weight_partial<DT>(p, dy, x, idx, int64_t(threadIdx.x), int64_t(blockDim.x));
    __syncthreads();
    for (int s = kRefBwdWeightBlock / 2; s > 0; s >>= 1) {
      if (int(threadIdx.x) < s) partial[threadIdx.x] += partial[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) Elem<OutDT>::store(dw, idx, partial[0]);
    __syncthreads();
  }
}

// Host emulation of the GPU reference (same per-element code; the backward-weight block
// reduction is emulated with the same 128 strided partial sums and tree order).
inline std::vector<double> reference_gpu_emulated(Variant v, DataType dt, const ConvProblem& p,
                                                  const void* x, const void* w, const void* y) {
  const int64_t total = written_elems(v, p);
  std::vector<double> out(static_cast<std::size_t>(total));
  dispatch_datatype(dt, [&](auto dtc) {
    constexpr DataType DT = decltype(dtc)::value;
    parallel_for(total, [&](int64_t i) {
      if (v == Variant::Forward) {
        out[size_t(i)] = ref_forward_elem<DT>(p, x, w, i);
      } else if (v == Variant::BackwardData) {
        out[size_t(i)] = ref_backward_data_elem<DT>(p, y, w, i);
      } else {
        float part[kRefBwdWeightBlock];
        for (int t = 0; t < kRefBwdWeightBlock; ++t)
          part[t] = ref_backward_weight_partial<DT>(p, y, x, i, t, kRefBwdWeightBlock);
        for (int s = kRefBwdWeightBlock / 2; s > 0; s >>= 1)
          for (int t = 0; t < s; ++t) part[t] += part[t + s];
        out[size_t(i)] = part[0];
      }
    });
    return 0;
  });
  return out;
}

// Enqueues the GPU reference. x/w/y are device tensors of datatype dt (the one the variant
// writes is the destination). With out_is_f32 the destination is a float buffer (reference);
// otherwise it has datatype dt (the reference used as a plain kernel).
inline gpuError_t reference_gpu(Variant v, DataType dt, const ConvProblem& p, void* x, void* w,
                                void* y, gpuStream_t stream, bool out_is_f32 = true) {
  const int64_t total = written_elems(v, p);
  if (total <= 0) return gpuSuccess;
  auto launch = [&](auto dtc, auto outc) {
    constexpr DataType DT = decltype(dtc)::value;
    constexpr DataType OT = decltype(outc)::value;
    if (v == Variant::BackwardWeight) {
      const unsigned grid = unsigned(total < (1 << 22) ? total : (1 << 22));
      ref_backward_weight_kernel<DT, OT><<<grid, kRefBwdWeightBlock, 0, stream>>>(p, y, x, w);
    } else {
      const unsigned block = 128, grid = grid_for(total, block);
      if (v == Variant::Forward)
        ref_forward_kernel<DT, OT><<<grid, block, 0, stream>>>(p, x, w, y);
      else
        ref_backward_data_kernel<DT, OT><<<grid, block, 0, stream>>>(p, y, w, x);
    }
    return 0;
  };
  dispatch_datatype(dt, [&](auto dtc) {
    if (out_is_f32)
      return launch(dtc, std::integral_constant<DataType, DataType::FP32>{});
    return launch(dtc, dtc);
  });
  return gpuGetLastError();
}

}  // namespace ckgen::host
