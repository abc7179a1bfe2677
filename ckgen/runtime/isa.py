"""Device-only compilation of a generated AMD project, with ISA and resource checks.

For every translation unit of a project written by ``ckgen generate --arch <gfx...>``:

1. compile it device-only with the target's command from arch_specs.json ("compiler":
   device_only_compiler + device_only_flags; e.g. clang++-19 -x hip -nogpuinc --cuda-device-only
   --offload-arch=gfx942 -O3), with ``-Rpass-analysis=kernel-resource-usage`` so the compiler
   reports per kernel VGPRs, AGPRs, SGPRs, scratch, LDS and its occupancy (waves per SIMD, from
   register use and LDS);
2. read the code object: ``llvm-readelf --notes`` (AMDGPU metadata: .vgpr_count, .agpr_count,
   .sgpr_count, .group_segment_fixed_size = LDS bytes, .private_segment_fixed_size = scratch,
   spill counts, wavefront size) and ``llvm-objdump -d`` (matrix instructions per kernel);
3. check each instance: it compiled; it holds matrix instructions (v_mfma / v_wmma) when its
   math unit is mfma / wmma (0 is a failure), every one of them of its warp tile's shape (a
   16x16x32 instance on gfx950 must hold v_mfma_f32_16x16x32_*, not a 16x16x16 fallback);
   direct (depthwise, no matrix unit) instances instead must hold no matrix instruction and,
   in every one of their kernels, global loads (global_load_*: not an empty kernel); no
   scratch (spills); LDS within the target.

The per-instance results go into the project's manifest.json ("resources", keyed by instance
name, sorted) and, with ``--resources-out``, into a file that ``ckgen generate --resources``
feeds back into the rule table (ckgen.space.rules, rule "measured").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ckgen.emit.render import MANIFEST, plan_units
from ckgen.errors import CkgenError
from ckgen.model.arch import ArchSpec, get_arch
from ckgen.model.naming import parse_instance_name
from ckgen.model.vocab import MathUnit, Pipeline, Platform
from ckgen.space.estimate import register_estimate
from ckgen.space.forms import math_unit
from ckgen.space.rules import measured_failures

RESOURCES_VERSION = 1


@dataclass
class InstanceResources:
    """What the compiler measured for one instance's main kernel."""

    name: str
    unit: str
    compiled: bool = False
    vgpr: int = 0  # total VGPRs the kernel allocates (.vgpr_count; arch + acc on gfx90a+)
    arch_vgpr: int = 0  # architectural VGPRs (compiler remark)
    agpr: int = 0
    sgpr: int = 0
    lds_bytes: int = 0
    scratch_bytes: int = 0  # per lane
    vgpr_spill: int = 0
    sgpr_spill: int = 0
    occupancy: int = 0  # waves per SIMD (compiler, from registers and LDS)
    wave_size: int = 0
    matrix_insts: int = 0
    matrix_expected: int = 0  # per k step of the main loop (RepM x RepN x RepK)
    matrix_mnemonics: dict[str, int] = field(
        default_factory=dict
    )  # matrix instructions by mnemonic
    global_loads: int = 0  # global_load_* instructions (direct: the fewest of its kernels)
    estimate: int = 0  # rules.register_estimate, for calibration
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("name")
        d["ok"] = self.ok
        return d


def device_only_command(arch: ArchSpec) -> list[str]:
    """The device-only compile command of ``arch`` (arch_specs.json "compiler")."""
    c = arch.compiler
    if arch.platform is not Platform.AMD or "device_only_compiler" not in c:
        raise CkgenError(
            f"{arch.name}: no device-only compiler in arch_specs.json (AMD targets only)"
        )
    return [c["device_only_compiler"], *c.get("device_only_flags", [])]


def toolchain_problem(arch: ArchSpec) -> str | None:
    """Why this machine cannot compile ``arch`` device-only, or None."""
    c = arch.compiler
    tools = (c.get("device_only_compiler"), c.get("linker"), c.get("objdump"), c.get("readelf"))
    missing = [t for t in tools if t and not shutil.which(t)]
    if missing:
        why = f"{', '.join(missing)} not found"
        if c.get("device_only_requires"):
            why += f" ({arch.name}: {c['device_only_requires']})"
        return why
    return None


# ------------------------------------------------------------------------------------------
# Parsers
# ------------------------------------------------------------------------------------------
_NOTE_KEY = re.compile(r"^  (?:- |  )\.(\w+):\s*(.*?)\s*$")


def parse_notes(text: str) -> dict[str, dict[str, str]]:
    """Kernel symbol -> metadata fields, from ``llvm-readelf --notes`` (amdhsa.kernels)."""
    kernels: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    for line in text.splitlines():
        if line.startswith("  - ."):
            cur = {}
        m = _NOTE_KEY.match(line)
        if m and cur is not None:
            cur[m.group(1)] = m.group(2)
            if m.group(1) == "name":
                kernels[m.group(2)] = cur
    return kernels


_FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:\s*$")


def matrix_mnemonics(disasm: str, mnemonic_prefix: str) -> dict[str, dict[str, int]]:
    """Function symbol -> {mnemonic: count} of the instructions starting with
    ``mnemonic_prefix``."""
    out: dict[str, dict[str, int]] = {}
    cur: dict[str, int] | None = None
    pat = re.compile(r"^\s+(" + re.escape(mnemonic_prefix) + r"\w*)\s")
    for line in disasm.splitlines():
        m = _FUNC.match(line)
        if m:
            cur = out.setdefault(m.group(1), {})
            continue
        m = pat.match(line)
        if cur is not None and m:
            cur[m.group(1)] = cur.get(m.group(1), 0) + 1
    return {f: dict(sorted(c.items())) for f, c in out.items()}


def count_matrix_insts(disasm: str, mnemonic_prefix: str) -> dict[str, int]:
    """Function symbol -> number of instructions starting with ``mnemonic_prefix``."""
    return {f: sum(c.values()) for f, c in matrix_mnemonics(disasm, mnemonic_prefix).items()}


def wrong_shape(mnemonics: dict[str, int], shape: str) -> dict[str, int]:
    """The matrix instructions whose mnemonic does not carry ``shape`` ("16x16x32") as its M x N x K
    (v_mfma_f32_16x16x32_f16, v_mfma_f32_32x32x2f32 and v_wmma_f32_16x16x16_f16 name theirs)."""
    pat = re.compile(r"(?<![0-9])" + re.escape(shape) + r"(?![0-9])")
    return {m: c for m, c in mnemonics.items() if not pat.search(m)}


_REMARK = re.compile(
    r"remark:\s+(Function Name|[A-Za-z][A-Za-z ]*?(?: \[[^\]]+\])?):\s*(\S+)\s*\[-Rpass-analysis"
)


def parse_remarks(text: str) -> dict[str, dict[str, str]]:
    """Kernel symbol -> compiler resource-usage remarks (-Rpass-analysis=kernel-resource-usage)."""
    out: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    for line in text.splitlines():
        m = _REMARK.search(line)
        if not m:
            continue
        key, val = m.group(1).strip(), m.group(2)
        if key == "Function Name":
            cur = out.setdefault(val, {})
        elif cur is not None:
            cur[key] = val
    return out


def _int(d: dict[str, str], *keys: str) -> int:
    for k in keys:
        if k in d:
            try:
                return int(d[k])
            except ValueError:
                pass
    return 0


# ------------------------------------------------------------------------------------------
# Driver
# ------------------------------------------------------------------------------------------
@dataclass
class UnitResult:
    source: str
    names: tuple[str, ...]
    ok: bool
    log: str
    notes: dict[str, dict[str, str]]
    remarks: dict[str, dict[str, str]]
    mnemonics: dict[str, dict[str, int]]
    loads: dict[str, int] = field(default_factory=dict)  # kernel symbol -> global_load_* count


def _run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, capture_output=True, text=True, check=False)


def compile_unit(
    project: Path, arch: ArchSpec, source: str, names: tuple[str, ...], variant: str, workdir: Path
) -> UnitResult:
    obj = workdir / (Path(source).stem + ".o")
    cmd = device_only_command(arch) + [
        "-I",
        str(project / "include"),
        "-I",
        str(project / "instances" / variant),
        "-Rpass-analysis=kernel-resource-usage",
        "-c",
        str(project / source),
        "-o",
        str(obj),
    ]
    p = _run(cmd)
    if p.returncode != 0:
        errs = [ln for ln in p.stderr.splitlines() if "error" in ln] or p.stderr.splitlines()[-5:]
        return UnitResult(source, names, False, "\n".join(errs[:8]), {}, {}, {})
    c = arch.compiler
    notes = _run([c["readelf"], "--notes", str(obj)])
    dis = _run([c["objdump"], "-d", f"--mcpu={arch.name}", str(obj)])
    if notes.returncode != 0 or dis.returncode != 0:
        return UnitResult(
            source, names, False, (notes.stderr + dis.stderr).strip()[-2000:], {}, {}, {}
        )
    return UnitResult(
        source,
        names,
        True,
        "",
        parse_notes(notes.stdout),
        parse_remarks(p.stderr),
        matrix_mnemonics(dis.stdout, c.get("matrix_instruction", "v_mfma")),
        count_matrix_insts(dis.stdout, "global_load"),
    )


# The main kernel template of an instance: implicit GEMM (kernel/conv_kernel.hpp) or direct
# (pipeline/depthwise.hpp, one kernel per filter path).
MAIN_KERNELS = ("grouped_conv_kernel", "depthwise_conv_kernel", "tma_conv_kernel")


def _kernel_symbols(symbols: list[str], name: str) -> list[str]:
    """The mangled main kernels of instance ``name`` (grouped_conv_kernel<...::name> or
    depthwise_conv_kernel<...::name, ...>), sorted."""
    needle = f"{len(name)}{name}E"
    return [s for s in sorted(symbols) if any(k in s for k in MAIN_KERNELS) and needle in s]


def _kernel_symbol(symbols: list[str], name: str) -> str | None:
    found = _kernel_symbols(symbols, name)
    return found[0] if found else None


def _on_matrix_unit(inst_json: dict[str, Any], arch: ArchSpec) -> bool:
    return math_unit(parse_instance_name(inst_json["name"]), arch) in (MathUnit.MFMA, MathUnit.WMMA)


def expected_matrix_shape(inst_json: dict[str, Any], arch: ArchSpec) -> str | None:
    """The M x N x K every matrix instruction of the instance must have (its warp tile), or None
    when it runs on FMA."""
    return (
        "x".join(str(v) for v in inst_json["warp_tile"])
        if _on_matrix_unit(inst_json, arch)
        else None
    )


def expected_matrix_insts(inst_json: dict[str, Any], arch: ArchSpec) -> int:
    if not _on_matrix_unit(inst_json, arch):
        return 0
    tm, tn, tk = inst_json["tile"]
    wm, wn, _ = inst_json["waves"]
    im, in_, ik = inst_json["warp_tile"]
    return (tm // (wm * im)) * (tn // (wn * in_)) * (tk // ik)


def check_project(
    project: Path,
    jobs: int = 0,
    kernels: Callable[[str], bool] | None = None,
    progress: Callable[[int], None] | None = None,
) -> tuple[ArchSpec, list[InstanceResources]]:
    """Compile every unit of ``project`` device-only and measure its instances."""
    man = project / MANIFEST
    try:
        data = json.loads(man.read_text())
        arch = get_arch(data["arch"])
        insts = {i["name"]: i for i in data["instances"]}
        shard = int(data.get("shard_size", 1))
    except FileNotFoundError:
        raise CkgenError(f"{man} not found: run `ckgen generate -o {project}` first") from None
    except (OSError, ValueError, KeyError, TypeError) as ex:
        raise CkgenError(f"{man}: not a ckgen manifest ({ex})") from None
    if arch.platform is not Platform.AMD:
        raise CkgenError(
            f"{project} was generated for {arch.name} ({arch.platform.value}); check-isa is for "
            "AMD targets"
        )
    why = toolchain_problem(arch)
    if why:
        raise CkgenError(f"cannot compile for {arch.name} here: {why}")
    names = [n for n in insts if kernels is None or kernels(n)]
    if not names:
        raise CkgenError("no instance selected")
    units = plan_units([parse_instance_name(n) for n in insts], shard)
    work = [u for u in units if any(n in names for n in u.names)]
    jobs = jobs or os.cpu_count() or 1
    results: list[InstanceResources] = []
    with tempfile.TemporaryDirectory(prefix="ckgen_isa_") as tmp:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futs = [
                pool.submit(
                    compile_unit, project, arch, u.source, u.names, u.variant.value, Path(tmp)
                )
                for u in work
            ]
            unit_results = []
            for f in futs:
                unit_results.append(f.result())
                if progress:
                    progress(1)
    for ur in unit_results:
        for n in ur.names:
            if n not in names:
                continue
            ij = insts[n]
            r = InstanceResources(name=n, unit=ur.source)
            r.matrix_expected = expected_matrix_insts(ij, arch)
            r.estimate = register_estimate(parse_instance_name(n), arch)
            if not ur.ok:
                r.failures.append(
                    "compile failed: " + ur.log.splitlines()[0][:300]
                    if ur.log
                    else "compile failed"
                )
                results.append(r)
                continue
            sym = _kernel_symbol(list(ur.notes), n)
            if sym is None:
                r.failures.append("kernel not found in the code object")
                results.append(r)
                continue
            r.compiled = True
            md, rm = ur.notes[sym], ur.remarks.get(sym, {})
            r.vgpr = _int(md, "vgpr_count")
            r.agpr = _int(md, "agpr_count")
            r.arch_vgpr = _int(rm, "VGPRs") or max(0, r.vgpr - r.agpr)
            r.sgpr = _int(md, "sgpr_count")
            r.lds_bytes = _int(md, "group_segment_fixed_size")
            r.scratch_bytes = _int(md, "private_segment_fixed_size")
            r.vgpr_spill = _int(md, "vgpr_spill_count")
            r.sgpr_spill = _int(md, "sgpr_spill_count")
            r.wave_size = _int(md, "wavefront_size")
            r.occupancy = _int(rm, "Occupancy [waves/SIMD]")
            r.matrix_mnemonics = ur.mnemonics.get(sym, {})
            r.matrix_insts = sum(r.matrix_mnemonics.values())
            direct = ij.get("pipeline") == Pipeline.DIRECT.value
            syms = _kernel_symbols(list(ur.notes), n) if direct else [sym]
            r.global_loads = min(ur.loads.get(k, 0) for k in syms)
            r.failures.extend(measured_failures(r.to_json(), arch))
            shape = expected_matrix_shape(ij, arch)
            if direct and r.global_loads == 0:
                r.failures.append("no global_load instruction in a direct kernel (empty kernel?)")
            if r.matrix_expected and r.matrix_insts == 0:
                r.failures.append(
                    f"no {arch.compiler.get('matrix_instruction')} instruction (expected "
                    f"{r.matrix_expected} per k step)"
                )
            elif shape is None and r.matrix_insts:
                r.failures.append(f"{r.matrix_insts} matrix instructions in an FMA instance")
            elif shape is not None and (bad := wrong_shape(r.matrix_mnemonics, shape)):
                r.failures.append(
                    f"matrix instructions not of the warp tile's shape {shape}: "
                    + ", ".join(f"{m} x{c}" for m, c in bad.items())
                )
            if r.wave_size and r.wave_size != arch.warp_size:
                r.failures.append(f"compiled for wave{r.wave_size}, target is wave{arch.warp_size}")
            results.append(r)
    results.sort(key=lambda r: r.name)
    return arch, results


def resources_document(arch: ArchSpec, results: list[InstanceResources]) -> dict[str, Any]:
    """The measured-resources document (also the manifest's 'resources' section)."""
    return {
        "resources_version": RESOURCES_VERSION,
        "arch": arch.name,
        "compiler": " ".join(device_only_command(arch)),
        "instances": {r.name: r.to_json() for r in sorted(results, key=lambda r: r.name)},
    }


def write_manifest_resources(project: Path, doc: dict[str, Any]) -> None:
    """Adds/replaces manifest.json's "resources" section (byte-deterministic, as render writes it).
    Instances measured earlier and not in this run are kept."""
    man = project / MANIFEST
    data = json.loads(man.read_text())
    old = (
        data.get("resources", {}).get("instances", {})
        if isinstance(data.get("resources"), dict)
        else {}
    )
    valid = {i["name"] for i in data.get("instances", [])}
    merged = {k: v for k, v in old.items() if k in valid}
    merged.update(doc["instances"])
    data["resources"] = dict(doc, instances=dict(sorted(merged.items())))
    text = json.dumps(data, indent=1, sort_keys=True) + "\n"
    tmp = man.with_suffix(".json.tmp")
    tmp.write_text(text)
    tmp.replace(man)


def load_resources(path: Path) -> tuple[str, dict[str, dict[str, Any]]]:
    """(arch, instance name -> measured resources) from a --resources-out file or a manifest.json
    that check-isa wrote into; ConfigError (file: key path) for anything else."""
    from ckgen.config.loader import load_json
    from ckgen.errors import ConfigError, Where, brief, shown

    data = load_json(path, "measured resources")
    top = ""
    doc = data
    if isinstance(data, dict) and "resources" in data:
        doc, top = data["resources"], "resources."
    if not isinstance(doc, dict):
        raise ConfigError(
            Where(path, None, top.rstrip(".")),
            f"expected a mapping with 'arch' and 'instances', got {shown(doc)} (write measured "
            "resources with `ckgen check-isa --resources-out`)",
        )
    for key in ("arch", "instances"):
        if key not in doc:
            raise ConfigError(
                Where(path, None, top.rstrip(".")),
                f"no '{key}': not measured resources (write them with `ckgen check-isa "
                "--resources-out`)",
            )
    if not isinstance(doc["arch"], str):
        raise ConfigError(
            Where(path, None, top + "arch"), f"expected a string, got {shown(doc['arch'])}"
        )
    insts = doc["instances"]
    if not isinstance(insts, dict):
        raise ConfigError(
            Where(path, None, top + "instances"),
            f"expected a mapping of instance name -> resources, got {shown(insts)}",
        )
    numbers = {f.name for f in fields(InstanceResources) if f.type in ("int", int)}
    for name, res in insts.items():
        kp = f"{top}instances.{brief(name, 60).strip(chr(39))}"
        if not isinstance(res, dict):
            raise ConfigError(Where(path, None, kp), f"expected a mapping, got {shown(res)}")
        for k, v in res.items():
            if k in numbers and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise ConfigError(
                    Where(path, None, f"{kp}.{k}"),
                    f"expected a non-negative integer, got {shown(v)}",
                )
        for k, kind in (("failures", list), ("matrix_mnemonics", dict)):
            if k in res and not isinstance(res[k], kind):
                raise ConfigError(
                    Where(path, None, f"{kp}.{k}"),
                    f"expected a {'list' if kind is list else 'mapping'}, got {shown(res[k])}",
                )
    return doc["arch"], insts
