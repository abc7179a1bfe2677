"""The C++ mirrors of ckgen's Python facts, rendered so that each fact is written once.

    python -m ckgen.model.cxx            rewrite every generated header (or block) under templates/
    python -m ckgen.model.cxx --check    exit 1 when a committed one differs from its rendering

Rendered:
  include/ckgen/core/vocab.hpp       the vocabulary (ckgen.model.vocab)
  include/ckgen/core/limits.hpp      the limits the C++ reads (ckgen.model.limits CXX_LIMITS)
  include/ckgen/core/forms.hpp       the kernel forms the C++ tells apart (ckgen.space.forms)
  include/ckgen/core/kernel_key.hpp  KernelKey: an instance's fields (ckgen.model.instance)
  project/dispatch/ckgen_dispatch.h  the blocks of the C API's structs: ckgen_problem
                                     (ckgen.model.problem C_PROBLEM_FIELDS), ckgen_epilogue and
                                     ckgen_epilogue_args (ckgen.model.epilogue)
tests/test_generated_headers.py checks that the committed files equal these renderings.
"""

from __future__ import annotations

import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path

from ckgen.model import vocab
from ckgen.model.epilogue import C_EPILOGUE_ARGS_FIELDS, C_EPILOGUE_FIELDS
from ckgen.model.instance import KernelInstance
from ckgen.model.limits import CXX_LIMITS
from ckgen.model.problem import C_PROBLEM_FIELDS
from ckgen.model.vocab import Word
from ckgen.resources import templates_dir


def _banner(source: str) -> str:
    return f"// Rendered from {source} by `python -m ckgen.model.cxx`; do not edit by hand."


def render_limits_hpp() -> str:
    lines = [
        _banner("ckgen/model/limits.py"),
        "// The limits of the template library; the Python rules and estimates read the same",
        "// values.",
        "#pragma once",
        "",
        "namespace ckgen {",
        "",
    ]
    for name, value, why in CXX_LIMITS:
        lines.append(f"// {why}")
        if isinstance(value, tuple):
            lines.append(f"inline constexpr int {name}[] = {{{', '.join(map(str, value))}}};")
        else:
            shown = f"{value // 1024} * 1024" if value >= 4096 and value % 1024 == 0 else value
            lines.append(f"inline constexpr int {name} = {shown};")
    lines += [
        "",
        "// Whether v is one of the values of an array above.",
        "template <int N>",
        "constexpr bool one_of(const int (&values)[N], int v) {",
        "  for (int i = 0; i < N; ++i)",
        "    if (values[i] == v) return true;",
        "  return false;",
        "}",
        "",
        "}  // namespace ckgen",
        "",
    ]
    return "\n".join(lines)


def render_forms_hpp() -> str:
    from ckgen.space.forms import ROW_FORM

    pipe, var, spec = ROW_FORM
    return "\n".join(
        [
            _banner("ckgen/space/forms.py"),
            "// The kernel forms the C++ tells apart from an instance's words.",
            "#pragma once",
            "",
            '#include "ckgen/core/vocab.hpp"',
            "",
            "namespace ckgen {",
            "",
            "// backward_weight's row form (TmaTraits::kRows): a tile one filter row's taps, a k",
            "// tile a segment of an output row.",
            "constexpr bool is_row_form(Pipeline p, Variant v, Specialization s) {",
            f"  return p == {pipe.cpp_ref} && v == {var.cpp_ref} &&",
            f"         s == {spec.cpp_ref};",
            "}",
            "",
            "}  // namespace ckgen",
            "",
        ]
    )


# KernelKey spells a triple field of KernelInstance as three fields <prefix>_m, _n, _k.
_KEY_TRIPLES = {"tile": "tile", "waves": "wave", "warp_tile": "warp"}
# Fields KernelKey has beyond the instance's: name first, arch, channel_pad and mask_copy (registry
# faces, not instances) last, ping_pong (derived) after swap_ab.
_KEY_COMMENTS = {
    "swap_ab": "wavelet_tma: the MMA computes the transposed tile (pipeline/tma_ws.hpp)",
    "ping_pong": "wavelet_tma: two math warpgroups take turns on units (TmaTraits::kPingPong)",
    "out_datatype": "the output's datatype (datatype unless the instance converts)",
    "channel_pad": "> 0: a face padding channels to this multiple (kernel/channel_pad.hpp)",
    "mask_copy": "a face masking a copy of dy ahead of a plain instance (kernel/mask_copy.hpp)",
}


def key_columns(field: str) -> list[str]:
    """The KernelKey fields that spell KernelInstance's field: <prefix>_m, _n, _k for a triple,
    else the field itself."""
    prefix = _KEY_TRIPLES.get(field)
    return [field] if prefix is None else [f"{prefix}_{d}" for d in "mnk"]


def kernel_key_fields() -> list[tuple[str, str, str]]:
    """KernelKey's fields as (C++ type, name, default initializer or '')."""
    hints = typing.get_type_hints(KernelInstance)
    out: list[tuple[str, str, str]] = [("std::string", "name", "")]
    for f in fields(KernelInstance):
        if f.name == "origin":
            continue
        t = hints[f.name]
        optional = [a for a in typing.get_args(t) if a is not type(None)]
        if len(optional) == 1 and len(typing.get_args(t)) == 2:
            t = optional[0]  # X | None: the key holds the value the instance resolves it to
        if f.name in _KEY_TRIPLES:
            out += [("int", c, "") for c in key_columns(f.name)]
        elif isinstance(t, type) and issubclass(t, Word):
            out.append((t.cpp_type(), f.name, ""))
        elif t is bool:
            out.append(("bool", f.name, " = false" if f.name == "swap_ab" else ""))
        elif t is int:
            out.append(("int", f.name, ""))
        else:
            raise TypeError(f"KernelInstance.{f.name}: no C++ spelling for {t}")
        if f.name == "swap_ab":
            out.append(("bool", "ping_pong", " = false"))
    out.append(("const char*", "arch", ""))
    out.append(("int", "channel_pad", " = 0"))
    out.append(("bool", "mask_copy", " = false"))
    return out


def render_kernel_key_hpp() -> str:
    lines = [
        _banner("ckgen/model/instance.py"),
        "// KernelKey: the static description of an instance (the fields of KernelInstance, a",
        "// triple as three fields), mirroring the generated Config; the key of the registry.",
        "#pragma once",
        "",
        "#include <string>",
        "",
        '#include "ckgen/core/vocab.hpp"',
        "",
        "namespace ckgen {",
        "",
        "struct KernelKey {",
    ]
    for ctype, name, init in kernel_key_fields():
        comment = f"  // {_KEY_COMMENTS[name]}" if name in _KEY_COMMENTS else ""
        lines.append(f"  {ctype} {name}{init};{comment}")
    lines += ["};", "", "}  // namespace ckgen", ""]
    return "\n".join(lines)


def _c_begin(struct: str, source: str) -> str:
    return f"/* BEGIN {struct}: rendered from ckgen/model/{source} by `python -m ckgen.model.cxx`;"


_C_BEGIN2 = " * do not edit by hand. */"


def _c_struct(struct: str, fields: Sequence[tuple[str, str, int]]) -> list[str]:
    lines = [f"typedef struct {struct} {{"]
    for name, ctype, count in fields:
        lines.append(f"  {ctype} {name}{f'[{count}]' if count else ''};")
    return [*lines, f"}} {struct};"]


def _c_enum(prefix: str, words: type[Word]) -> list[str]:
    items = [f"  CKGEN_{prefix}_{m.value.upper()} = {i}," for i, m in enumerate(words)]
    return ["enum {", *items, "};"]


def render_c_problem() -> list[str]:
    return _c_struct("ckgen_problem", [(n, t, c) for n, t, c, _ in C_PROBLEM_FIELDS])


def render_c_epilogue() -> list[str]:
    # out_datatype: 0 (the inputs' datatype), else 1 + the DataType (ckgen.model.epilogue)
    outs = [f"  CKGEN_OUT_{m.value.upper()} = {i + 1}," for i, m in enumerate(vocab.DataType)]
    return [
        *_c_enum("CHANNEL_OP", vocab.ChannelOp),
        *_c_enum("ACTIVATION", vocab.Activation),
        "enum {",
        "  CKGEN_OUT_INPUTS = 0,",
        *outs,
        "};",
        *_c_struct("ckgen_epilogue", C_EPILOGUE_FIELDS),
    ]


def render_c_epilogue_args() -> list[str]:
    return _c_struct("ckgen_epilogue_args", C_EPILOGUE_ARGS_FIELDS)


# The rendered blocks of ckgen_dispatch.h: name (its markers), source module, rendering.
C_BLOCKS: tuple[tuple[str, str, Callable[[], list[str]]], ...] = (
    ("ckgen_problem", "problem.py", render_c_problem),
    ("ckgen_epilogue", "epilogue.py", render_c_epilogue),
    ("ckgen_epilogue_args", "epilogue.py", render_c_epilogue_args),
)


def render_dispatch_h(current: str) -> str:
    """ckgen_dispatch.h with its struct blocks (C_BLOCKS) rendered anew."""
    text = current
    for struct, source, render in C_BLOCKS:
        begin, end = _c_begin(struct, source), f"/* END {struct} */"
        head, sep, rest = text.partition(begin)
        _, sep2, tail = rest.partition(end)
        if not sep or not sep2:
            raise ValueError(f"ckgen_dispatch.h lacks the BEGIN / END {struct} markers")
        text = head + "\n".join([begin, _C_BEGIN2, *render(), end]) + tail
    return text


def _whole(render: Callable[[], str]) -> Callable[[str], str]:
    return lambda _current: render()


# Path under templates/ -> its rendering from the file's current text.
GENERATED: dict[str, Callable[[str], str]] = {
    "include/ckgen/core/vocab.hpp": _whole(vocab.render_cpp_header),
    "include/ckgen/core/limits.hpp": _whole(render_limits_hpp),
    "include/ckgen/core/forms.hpp": _whole(render_forms_hpp),
    "include/ckgen/core/kernel_key.hpp": _whole(render_kernel_key_hpp),
    "project/dispatch/ckgen_dispatch.h": render_dispatch_h,
}


def stale(root: Path | None = None) -> list[str]:
    """The generated files under root (templates/) that differ from their rendering."""
    root = root or templates_dir()
    out = []
    for rel, render in GENERATED.items():
        p = root / rel
        current = p.read_text() if p.exists() else ""
        if current != render(current):
            out.append(rel)
    return out


def main(argv: list[str]) -> int:
    root = templates_dir()
    if "--check" in argv:
        bad = stale(root)
        for rel in bad:
            print(f"templates/{rel} is stale: python -m ckgen.model.cxx", file=sys.stderr)
        return 1 if bad else 0
    for rel, render in GENERATED.items():
        p = root / rel
        current = p.read_text() if p.exists() else ""
        new = render(current)
        if new != current:
            p.write_text(new)
            print(f"wrote templates/{rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
