"""Using generated kernels: build a project (build), AMD device-only ISA checks (isa), load and
select kernels of a compiled library (library), PyTorch ops over it (torch)."""
