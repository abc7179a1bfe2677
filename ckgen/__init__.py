"""ckgen: a code generator for grouped-convolution GPU kernels in the style of CK Tile."""

__version__ = "0.1.0"

# Run-time pieces load lazily, so `import ckgen` (and the CLI) stay light.
_LAZY = {"Registry": "registry", "Kernel": "registry", "Selection": "registry",
         "UnsupportedProblem": "registry", "NoKernel": "registry", "CkgenRuntimeError": "registry",
         "Problem": "shapes"}


def __getattr__(name: str):  # PEP 562
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'ckgen' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"ckgen.{mod}"), name)
