"""ckgen: a code generator for grouped-convolution GPU kernels in the style of CK Tile."""

__version__ = "0.1.0"
