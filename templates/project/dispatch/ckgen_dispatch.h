/* C API of the generated kernel library: lib/libckgen_dispatch.so (ctypes, dlopen, C callers).
 *
 * Kernels are addressed by index 0..ckgen_num_kernels()-1 (the registry's order). Strings
 * returned are owned by the library: valid until the next call on the same thread.
 * Return codes: 0 ok; CKGEN_E_* below otherwise, with ckgen_last_error() the reason. */
#ifndef CKGEN_DISPATCH_H
#define CKGEN_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CKGEN_C_API_VERSION 4

#if defined(CKGEN_DISPATCH_BUILD) && defined(__GNUC__)
#define CKGEN_API __attribute__((visibility("default")))
#else
#define CKGEN_API
#endif

enum {
  CKGEN_OK = 0,
  CKGEN_E_INDEX = 1,       /* kernel index out of range */
  CKGEN_E_UNSUPPORTED = 2, /* the kernel cannot run the problem (reason in ckgen_last_error) */
  CKGEN_E_INVALID = 3,     /* bad argument (problem, variant or datatype word, path) */
  CKGEN_E_LAUNCH = 4,      /* the GPU runtime returned an error */
  CKGEN_E_NOT_FOUND = 5,   /* select: no kernel supports the problem */
  CKGEN_E_DEVICE = 6       /* no GPU device, or a device query failed */
};

/* A problem as 3 spatial dims (D, H, W); 1D/2D put 1 (sizes) / 0 (pads) into the leading
 * dims, as ckgen::ConvProblem does. The output size is computed. */
/* BEGIN ckgen_problem: rendered from ckgen/model/problem.py by `python -m ckgen.model.cxx`;
 * do not edit by hand. */
typedef struct ckgen_problem {
  int32_t ndim;
  int32_t reserved;
  int64_t G;
  int64_t N;
  int64_t C;
  int64_t K;
  int64_t in[3];
  int64_t filter[3];
  int64_t stride[3];
  int64_t dilation[3];
  int64_t pad_l[3];
  int64_t pad_r[3];
} ckgen_problem;
/* END ckgen_problem */

/* A fused forward epilogue, y = act(op(acc) + beta * residual) in fp32 before the conversion, or
 * a backward fusion: a gradient mask (CKGEN_ACTIVATION_D*) multiplied into dy from the saved
 * forward output, and (backward_weight) CKGEN_CHANNEL_OP_BIAS_GRAD, the bias gradient.
 * ckgen_epilogue: the operations (CKGEN_CHANNEL_OP_*, CKGEN_ACTIVATION_*, residual 0 / 1, stats
 * 0 / 1) and the datatype a forward writes its output in (CKGEN_OUT_*: CKGEN_OUT_INPUTS, the
 * inputs' datatype, or a conversion; out and residual buffers are sized in it); all zero is a
 * plain convolution. */
/* BEGIN ckgen_epilogue: rendered from ckgen/model/epilogue.py by `python -m ckgen.model.cxx`;
 * do not edit by hand. */
enum {
  CKGEN_CHANNEL_OP_NONE = 0,
  CKGEN_CHANNEL_OP_BIAS = 1,
  CKGEN_CHANNEL_OP_SCALE_SHIFT = 2,
  CKGEN_CHANNEL_OP_BIAS_GRAD = 3,
};
enum {
  CKGEN_ACTIVATION_NONE = 0,
  CKGEN_ACTIVATION_RELU = 1,
  CKGEN_ACTIVATION_RELU6 = 2,
  CKGEN_ACTIVATION_LEAKY_RELU = 3,
  CKGEN_ACTIVATION_SILU = 4,
  CKGEN_ACTIVATION_GELU_TANH = 5,
  CKGEN_ACTIVATION_DRELU = 6,
  CKGEN_ACTIVATION_DRELU6 = 7,
  CKGEN_ACTIVATION_DLEAKY_RELU = 8,
};
enum {
  CKGEN_OUT_INPUTS = 0,
  CKGEN_OUT_FP16 = 1,
  CKGEN_OUT_BF16 = 2,
  CKGEN_OUT_FP32 = 3,
};
typedef struct ckgen_epilogue {
  int32_t channel_op;
  int32_t activation;
  int32_t residual;
  int32_t stats;
  int32_t out_datatype;
} ckgen_epilogue;
/* END ckgen_epilogue */
/* ckgen_epilogue_args: the operands. bias: G*K fp32 (scale_shift's shift), scale: G*K fp32,
 * residual: the output's shape, layout and datatype (16-byte aligned); y: a gradient mask's saved
 * forward output (dy's shape, layout and datatype, 16-byte aligned); db: bias_grad's G*K fp32
 * output (written whole: zeroed, then summed); NULL where the kernel's operations read nothing.
 * beta scales the residual, alpha is leaky_relu's (and dleaky_relu's) slope. */
/* BEGIN ckgen_epilogue_args: rendered from ckgen/model/epilogue.py by `python -m ckgen.model.cxx`;
 * do not edit by hand. */
typedef struct ckgen_epilogue_args {
  const float* bias;
  const float* scale;
  const void* residual;
  float beta;
  float alpha;
  const void* y;
  float* db;
  float* stats;
} ckgen_epilogue_args;
/* END ckgen_epilogue_args */

CKGEN_API int ckgen_api_version(void);
CKGEN_API const char* ckgen_arch(void);
CKGEN_API int ckgen_num_kernels(void);
CKGEN_API const char* ckgen_kernel_name(int index);
/* "variant datatype ndim tile_m tile_n tile_k k_batch" (words of the vocabulary). */
CKGEN_API const char* ckgen_kernel_info(int index);
/* Empty string when the kernel can run the problem, else the reason (never NULL). */
CKGEN_API const char* ckgen_is_supported(int index, const ckgen_problem* p, int k_batch);
/* Bytes of workspace ckgen_run needs (-1: bad index or problem). */
CKGEN_API int64_t ckgen_workspace_bytes(int index, const ckgen_problem* p, int k_batch);
/* Enqueues the convolution on stream (a cudaStream_t / hipStream_t, 0 = default stream).
 * Refused before any launch (CKGEN_E_INVALID / CKGEN_E_UNSUPPORTED, nothing written): an invalid
 * or overflowing problem, a NULL tensor pointer, a pointer not aligned to what the kernel's
 * vector width on that tensor needs (at least the element size), a missing workspace. A launch
 * error (the kernel's return or the runtime's last error after it) is CKGEN_E_LAUNCH, the
 * message naming the kernel. Same as ckgen_run_checked with every size -1. */
CKGEN_API int ckgen_run(int index, const ckgen_problem* p, void* in, void* wei, void* out, void* workspace,
              void* stream, int k_batch);
/* ckgen_run with the byte sizes of the buffers behind the pointers (-1: unknown, not checked):
 * a buffer smaller than the problem's tensor (ckgen_tensor_bytes) or than the workspace
 * ckgen_workspace_bytes asks for is refused with CKGEN_E_INVALID before any launch. */
CKGEN_API int ckgen_run_checked(int index, const ckgen_problem* p, void* in, int64_t in_bytes, void* wei,
                                int64_t wei_bytes, void* out, int64_t out_bytes, void* workspace,
                                int64_t workspace_bytes, void* stream, int k_batch);
/* Bytes of x (in), w (wei) and y (out) of the problem in datatype (any pointer may be NULL; a
 * kernel converting its output, CKGEN_OUT_*, writes y in that datatype: ask for it with that).
 * CKGEN_E_INVALID for an invalid problem or one whose sizes overflow int64. */
CKGEN_API int ckgen_tensor_bytes(const ckgen_problem* p, const char* datatype, int64_t* in_bytes,
                                 int64_t* wei_bytes, int64_t* out_bytes);
/* Best kernel for (problem, variant, datatype): its index, or -1 (reason in ckgen_last_error:
 * without a supporting kernel, the refusals of the nearest instances, most frequent first).
 * k_batch_out (may be NULL) receives the k_batch to pass to ckgen_run; source_out (may be
 * NULL) the decision's explanation (tuning-db-exact / tuning-db-nearest / cost-model /
 * autotune ...). Answered from the selection cache on a repeated (problem, variant, datatype,
 * current device); thread safe. */
CKGEN_API int ckgen_select(const ckgen_problem* p, const char* variant, const char* datatype,
                 int* k_batch_out, const char** source_out);
/* ckgen_select for a fused forward convolution: only kernels whose operations are exactly *ops
 * take part (a plain request never gets a fused kernel); ops NULL or all zero is ckgen_select,
 * and an out_datatype of the inputs' own datatype (CKGEN_OUT_FP16 for fp16) converts nothing.
 * The tuning database holds plain kernels: a fused request ranks its kernels as their plain twins
 * (the same kernels without the operations) would be ranked, else by the cost model. -1 with
 * CKGEN_E_INVALID for an operation code out of range or a fused request of another variant. */
CKGEN_API int ckgen_select_fused(const ckgen_problem* p, const char* variant, const char* datatype,
                                 const ckgen_epilogue* ops, int* k_batch_out, const char** source_out);
/* The operations of kernel `index` (all zero for a plain kernel). */
CKGEN_API int ckgen_kernel_epilogue(int index, ckgen_epilogue* ops_out);
/* ckgen_run_checked with the fused epilogue's operands (ep NULL: none). Refused before any launch
 * (CKGEN_E_INVALID) when an operand the kernel's operations read is NULL, one they do not read is
 * given, or the residual is not 16-byte aligned; ckgen_run / ckgen_run_checked on a fused kernel
 * are refused the same way. */
CKGEN_API int ckgen_run_fused(int index, const ckgen_problem* p, void* in, int64_t in_bytes, void* wei,
                              int64_t wei_bytes, void* out, int64_t out_bytes, const ckgen_epilogue_args* ep,
                              void* workspace, int64_t workspace_bytes, void* stream, int k_batch);
/* Same, by the cost model only (ignores the tuning database). */
CKGEN_API int ckgen_select_cost_model(const ckgen_problem* p, const char* variant, const char* datatype,
                            int* k_batch_out, const char** source_out);
/* Estimated microseconds of a kernel on a problem (cost model; < 0 when unsupported). */
CKGEN_API double ckgen_estimate_us(int index, const ckgen_problem* p, int k_batch);
/* Loads a tuning database (JSON of `ckgen tune`); NULL or "" clears it. Returns the number of
 * entries, or -1 (reason in ckgen_last_error). Without a call, CKGEN_TUNING_DB is read on the
 * first select. Clears the selection cache. */
CKGEN_API int ckgen_load_tuning_db(const char* path);
/* backward_weight split counts the cost model tries (0 = the instance's own choice); n = 0
 * restores the default {0, 1, 2, 4, 8, 16, 32}. */
CKGEN_API void ckgen_set_k_batch_candidates(const int* k_batches, int n);
/* Overrides the compute-unit count of the cost model (0: the arch number / the device's). */
CKGEN_API void ckgen_set_compute_units(int compute_units);
CKGEN_API const char* ckgen_last_error(void);

/* ---- selection cache: (problem, variant, datatype, device) -> (kernel, k_batch) ----------
 * Cleared by ckgen_load_tuning_db, ckgen_set_k_batch_candidates, ckgen_set_compute_units and
 * ckgen_cache_clear; at most ckgen_cache_set_capacity entries (default 4096, or
 * CKGEN_SELECT_CACHE_SIZE; a full cache is cleared before the next insertion). */
/* The current device (cudaGetDevice / hipGetDevice), -1 without one. */
CKGEN_API int ckgen_current_device(void);
/* Changes whenever the cache is cleared (callers keeping their own copy compare it). */
CKGEN_API int64_t ckgen_cache_epoch(void);
CKGEN_API void ckgen_cache_clear(void);
/* 0 disables the cache. */
CKGEN_API void ckgen_cache_set_capacity(int64_t entries);
/* Entries held, lookups answered and missed so far (any pointer may be NULL). */
CKGEN_API void ckgen_cache_stats(int64_t* size, int64_t* hits, int64_t* misses);
/* Records kernel `index` with k_batch as ckgen_select's answer for (problem, variant, datatype)
 * on the current device (an autotuned pick); why (may be NULL) becomes its explanation.
 * CKGEN_E_INDEX / CKGEN_E_INVALID / CKGEN_E_UNSUPPORTED when the kernel cannot serve it. */
CKGEN_API int ckgen_cache_put(const ckgen_problem* p, const char* variant, const char* datatype, int index,
                              int k_batch, const char* why);

/* ---- autotune ------------------------------------------------------------------------------
 * Up to k (kernel index, k_batch) pairs worth timing, best guess first: ckgen_select's pick, an
 * exact tuning-database entry's ranking, then the cost model's order. Writes out_index[i],
 * out_k_batch[i] and (may be NULL) out_estimate_us[i]; returns the count, or -1 (reason in
 * ckgen_last_error; no kernel supports the problem: CKGEN_E_NOT_FOUND's message). */
CKGEN_API int ckgen_candidates(const ckgen_problem* p, const char* variant, const char* datatype, int k,
                               int* out_index, int* out_k_batch, double* out_estimate_us);
/* *capturing = 1 while stream is capturing a CUDA / HIP graph (also when the runtime cannot
 * tell: never time then), else 0. */
CKGEN_API int ckgen_stream_is_capturing(void* stream, int* capturing);
/* Runs the kernel warmup + iters times on stream and writes the mean milliseconds of the iters
 * runs (events on the stream; waits for them). Refused while the stream is capturing. */
CKGEN_API int ckgen_time_run(int index, const ckgen_problem* p, void* in, void* wei, void* out,
                             void* workspace, void* stream, int k_batch, int warmup, int iters,
                             float* ms_out);
/* The device's name (NUL-terminated, truncated to name_len), compute-unit count, driver and
 * runtime versions (any pointer may be NULL). CKGEN_E_DEVICE without a device. */
/* Device memory for scratch buffers (autotune without a framework allocator): gpuMalloc /
 * gpuFree on the current device. */
CKGEN_API int ckgen_device_alloc(int64_t bytes, void** ptr);
CKGEN_API int ckgen_device_free(void* ptr);
CKGEN_API int ckgen_device_info(int device, char* name, int name_len, int* sm_count, int* driver_version,
                                int* runtime_version);

#ifdef __cplusplus
}
#endif
#endif /* CKGEN_DISPATCH_H */
