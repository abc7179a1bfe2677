"""Resource estimates of an instance: shared memory (lds), registers per thread (registers), and the
sizing of the direct kernel (direct) and of wavelet_tma (tma) they build on."""

from ckgen.space.estimate.lds import lds_bytes
from ckgen.space.estimate.registers import register_estimate

__all__ = ["lds_bytes", "register_estimate"]
