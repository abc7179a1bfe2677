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

#define CKGEN_C_API_VERSION 1

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
  CKGEN_E_NOT_FOUND = 5    /* select: no kernel supports the problem */
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
/* Enqueues the convolution on stream (a cudaStream_t / hipStream_t, 0 = default stream). */
CKGEN_API int ckgen_run(int index, const ckgen_problem* p, void* in, void* wei, void* out, void* workspace,
              void* stream, int k_batch);
/* Best kernel for (problem, variant, datatype): its index, or -1 (reason in ckgen_last_error).
 * k_batch_out (may be NULL) receives the k_batch to pass to ckgen_run; source_out (may be
 * NULL) the decision's explanation (tuning-db-exact / tuning-db-nearest / cost-model ...). */
CKGEN_API int ckgen_select(const ckgen_problem* p, const char* variant, const char* datatype,
                 int* k_batch_out, const char** source_out);
/* Same, by the cost model only (ignores the tuning database). */
CKGEN_API int ckgen_select_cost_model(const ckgen_problem* p, const char* variant, const char* datatype,
                            int* k_batch_out, const char** source_out);
/* Estimated microseconds of a kernel on a problem (cost model; < 0 when unsupported). */
CKGEN_API double ckgen_estimate_us(int index, const ckgen_problem* p, int k_batch);
/* Loads a tuning database (JSON of `ckgen tune`); NULL or "" clears it. Returns the number of
 * entries, or -1 (reason in ckgen_last_error). Without a call, CKGEN_TUNING_DB is read on the
 * first select. */
CKGEN_API int ckgen_load_tuning_db(const char* path);
/* backward_weight split counts the cost model tries (0 = the instance's own choice); n = 0
 * restores the default {0, 1, 2, 4, 8, 16, 32}. */
CKGEN_API void ckgen_set_k_batch_candidates(const int* k_batches, int n);
/* Overrides the compute-unit count of the cost model (0: the arch number / the device's). */
CKGEN_API void ckgen_set_compute_units(int compute_units);
CKGEN_API const char* ckgen_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* CKGEN_DISPATCH_H */
