"""ckgen: a code generator for grouped-convolution GPU kernels in the style of CK Tile."""

__version__ = "0.1.0"

# The public API. Run-time pieces load lazily, so `import ckgen` (and the CLI) stay light.
# `Registry` is the historical name of KernelLibrary (the Python face of libckgen_dispatch.so).
_LAZY = {
    "KernelLibrary": ("ckgen.runtime.library", "KernelLibrary"),
    "Registry": ("ckgen.runtime.library", "KernelLibrary"),
    "Kernel": ("ckgen.runtime.library", "Kernel"),
    "Selection": ("ckgen.runtime.library", "Selection"),
    "UnsupportedProblem": ("ckgen.runtime.library", "UnsupportedProblem"),
    "NoKernel": ("ckgen.runtime.library", "NoKernel"),
    "CkgenRuntimeError": ("ckgen.runtime.library", "CkgenRuntimeError"),
    "Problem": ("ckgen.model.problem", "Problem"),
}


def __getattr__(name: str) -> object:  # PEP 562
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module 'ckgen' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(where[0]), where[1])
