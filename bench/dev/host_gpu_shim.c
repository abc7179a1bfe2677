/* Host-only selection checks without a GPU: LD_PRELOAD this to make cudaGetDevice /
 * cudaDeviceGetAttribute answer like an H100/H200 (132 SMs, 227 KB opt-in shared memory), so
 * is_supported() and the dispatcher's cost model see the GPU the times were measured on instead
 * of the no-device fallbacks (48 KB shared memory would refuse every large-tile instance).
 *
 *   gcc -shared -fPIC -Wl,--version-script=bench/dev/host_gpu_shim.map bench/dev/host_gpu_shim.c -o /tmp/shim.so
 *   LD_PRELOAD=/tmp/shim.so ckgen check-heuristic ...
 * Nothing else of the runtime is faked: launching a kernel still fails. */
#include <stdlib.h>

typedef int cudaError_t;
enum { kMultiProcessorCount = 16, kMaxSharedMemoryPerBlockOptin = 97 };

static int env_int(const char* name, int dflt) {
  const char* v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

cudaError_t cudaGetDevice(int* dev) {
  *dev = 0;
  return 0;
}

cudaError_t cudaDeviceGetAttribute(int* value, int attr, int dev) {
  (void)dev;
  if (attr == kMultiProcessorCount) *value = env_int("CKGEN_SHIM_SMS", 132);
  else if (attr == kMaxSharedMemoryPerBlockOptin) *value = env_int("CKGEN_SHIM_SMEM_OPTIN", 232448);
  else return 1; /* cudaErrorInvalidValue */
  return 0;
}
