"""bench/sass_ops.py: opcode counts of a kernel's SASS, read from cuobjdump's text."""

from __future__ import annotations

import sass_ops

SASS = """
	code for sm_90a
		Function : _ZN5ckgen6helperEv
	.headerflags	@"EF_CUDA_SM90"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                  /* 0x00000a00ff017b82 */
                                                                           /* 0x000fe20000000800 */
        /*0010*/                   EXIT ;                                  /* 0x000000000000794d */
		Function : _ZN5ckgen4mainEv
	.headerflags	@"EF_CUDA_SM90"
        /*0000*/                   SHFL.IDX PT, R3, R2, R4, 0x1f ;        /* 0x00001f0402037589 */
        /*0010*/               @P0 FADD R5, R5, R3 ;                      /* 0x0000000305050221 */
        /*0020*/              @!P1 FADD R6, R6, R3 ;                      /* 0x0000000306069221 */
        /*0030*/                   ISETP.GE.AND P0, PT, R1, R2, PT ;      /* 0x000000020100720c */
        /*0040*/               @P0 BRA 0x10 ;                             /* 0x0000000000280947 */
"""
RES = """Resource usage:
 Function _ZN5ckgen4mainEv:
  REG:168 STACK:8 SHARED:0 LOCAL:4 CONSTANT[0]:568 TEXTURE:0 SURFACE:0 SAMPLER:0
 Function _ZN5ckgen6helperEv:
  REG:32 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:568 TEXTURE:0 SURFACE:0 SAMPLER:0
"""


def test_largest_function_and_its_opcodes() -> None:
    k = sass_ops.largest(SASS, RES)
    assert k.function == "_ZN5ckgen4mainEv"
    assert k.ops == {"SHFL.IDX": 1, "FADD": 2, "ISETP.GE.AND": 1, "BRA": 1}
    assert (k.registers, k.stack, k.local) == (168, 8, 4)


def test_table_lists_what_differs_most_first() -> None:
    a = sass_ops.KernelOps("a", sass_ops.Counter({"FADD": 0, "BRA": 3, "SHFL.IDX": 2}))
    b = sass_ops.KernelOps("b", sass_ops.Counter({"FADD": 128, "BRA": 3, "SHFL.IDX": 66}))
    assert sass_ops.table([a, b], 10, False) == [("FADD", [0, 128]), ("SHFL.IDX", [2, 66])]
    assert [op for op, _ in sass_ops.table([a, b], 10, True)] == ["FADD", "SHFL.IDX", "BRA"]
    assert len(sass_ops.table([a, b], 1, True)) == 1


def test_missing_tools_exit_2(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(sass_ops, "find_tool", lambda name: None)
    assert sass_ops.main([str(tmp_path), "x"]) == 2
    assert "nvcc and cuobjdump not found" in capsys.readouterr().err
