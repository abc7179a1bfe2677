#!/usr/bin/env bash
# Loading lib/libckgen_dispatch.so next to PyTorch (GPU machine): which runtime each side binds,
# and whether ckgen's C API works after `import torch`. Usage: GEN=<built project> bash bench/dev/torch_load_probe.sh
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONPATH=$ROOT
LIB=$GEN/build/lib/libckgen_dispatch.so
echo "== ldd"; ldd "$LIB"
echo "== exported"; nm -D --defined-only "$LIB" | awk '{print $3}' | grep -v "^ckgen_" | head -20
echo "== undefined cuda"; nm -D --undefined-only "$LIB" | grep -i cuda | head -10
python3 -c "import torch; print('torch', torch.__version__, torch.version.cuda)"
for pre in "" "import torch" "import torch; torch.cuda.init()" "import torch; torch.zeros(1, device='cuda')"; do
  echo "== pre: '$pre'"
  python3 -X faulthandler -c "
$pre
import ctypes, sys
l = ctypes.CDLL('$LIB'); print('loaded', flush=True)
l.ckgen_arch.restype = ctypes.c_char_p
print('arch', l.ckgen_arch(), flush=True)
l.ckgen_num_kernels.restype = ctypes.c_int
l.ckgen_kernel_info.restype = ctypes.c_char_p
print("n", l.ckgen_num_kernels(), flush=True)
print("info", l.ckgen_kernel_info(0), flush=True)
" 2>&1 | grep -v "^  File\|Extension modules" | tail -8
done
echo "== bindings of libckgen_dispatch after import torch"
LD_DEBUG=bindings python3 -c "
import torch, ctypes
l = ctypes.CDLL('$LIB'); l.ckgen_arch.restype = ctypes.c_char_p; print(l.ckgen_arch())" 2>&1 \
  | grep "libckgen_dispatch" | grep -v "to .*libckgen_dispatch.so" | awk '{$1=""; print}' | sort | uniq | head -40
