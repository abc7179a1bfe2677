"""Running the profiler binaries of a built project, sharded over GPUs, and merging their CSVs.

One profiler process per (variant, device): the selected instances of a variant are split
round-robin into one list per device, and each process sees only its GPU
(CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES), so N GPUs profile N shards at once. The per-process
CSVs are merged and the `best` column recomputed over all shards.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import math
import os
import subprocess
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ckgen.errors import CkgenError, ConfigError, Where, brief
from ckgen.model.naming import parse_instance_name
from ckgen.model.problem import load_shapes, write_shapes

VARIANTS = ("forward", "backward_data", "backward_weight")
FAILED = ("fail", "error")


@dataclass
class Shard:
    variant: str
    device: str
    instances: list[str]
    csv: Path
    log: Path
    proc: subprocess.Popen | None = None
    rc: int | None = None
    seconds: float = 0.0


@dataclass
class ProfileRun:
    rows: list[dict[str, str]]
    shards: list[Shard] = field(default_factory=list)
    csv: Path | None = None

    @property
    def failed(self) -> list[Shard]:
        return [s for s in self.shards if s.rc not in (0, 4)]


def build_dir_of(out: Path) -> Path:
    return out / "build"


def profiler_path(out: Path, variant: str) -> Path:
    return build_dir_of(out) / "bin" / f"ckgen_profiler_{variant}"


def list_instances(
    out: Path, variant: str, datatypes: Sequence[str] = (), kernels: Sequence[str] = ()
) -> list[str]:
    """Names a profiler binary has (its --list; no GPU needed), filtered by globs/datatypes."""
    exe = profiler_path(out, variant)
    if not exe.is_file():
        return []
    cmd = [str(exe), "--list"]
    if datatypes:
        cmd += ["--datatype", ",".join(datatypes)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise CkgenError(f"{exe} --list failed (exit {p.returncode}): {p.stderr.strip()[-500:]}")
    names = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("grouped_conv_")]
    if kernels:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in kernels)]
    return names


def visible_devices() -> list[str]:
    """GPU indices: CUDA_VISIBLE_DEVICES when set, else nvidia-smi -L, else ['0']."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env:
        return [d.strip() for d in env.split(",") if d.strip()]
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
        n = sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))
        if n:
            return [str(i) for i in range(n)]
    except (OSError, subprocess.TimeoutExpired):
        pass
    return ["0"]


def shard(names: Sequence[str], n: int) -> list[list[str]]:
    parts: list[list[str]] = [[] for _ in range(max(1, n))]
    for i, name in enumerate(names):
        parts[i % len(parts)].append(name)
    return [p for p in parts if p]


def run_profile(
    out: Path,
    shapes: Path,
    *,
    variants: Sequence[str] = VARIANTS,
    datatypes: Sequence[str] = (),
    devices: Sequence[str] = (),
    kernels: Sequence[str] = (),
    shape_glob: str = "",
    verify: str = "gpu",
    warmup: int = 5,
    repeat: int = 10,
    k_batches: Sequence[int] = (),
    split_reduce: str = "auto",
    streamk_blocks: int = 0,
    csv_out: Path | None = None,
    timeout: float = 3600,
    on_event: Callable[[str], None] | None = None,
    only_shapes: tuple[str, Sequence[str]] | None = None,
) -> ProfileRun:
    """Profile every selected instance on every shape, sharded over devices. Returns the merged
    rows.
    k_batches, split_reduce and streamk_blocks are the profilers' --k-batch / --split-reduce /
    --streamk-blocks (RunOptions), passed to every variant; an instance that cannot take a value
    is skipped for it by the profiler (is_supported), not run wrong. only_shapes (file name,
    shape names): profile only these shapes of the file, written to OUTPUT/profile/<file name>
    after every check."""
    shapes = shapes.resolve()
    if not shapes.exists():
        raise CkgenError(f"shapes file {shapes} not found")
    if not shapes.is_file():
        raise CkgenError(f"shapes file {shapes} is not a regular file")
    problems = load_shapes(shapes)  # read before anything is written: a bad row is an error here
    devs = list(devices) or visible_devices()
    work = out / "profile"  # created by the first shard's start(), after every check
    csv_path = csv_out or work / "results.csv"
    from ckgen.emit.output import check_writable  # (imports the renderer)

    check_writable(csv_path.parent)
    shards: list[Shard] = []
    for v in variants:
        names = list_instances(out, v, datatypes, kernels)
        if not names:
            if on_event:
                on_event(f"{v}: no instances built (or none match); skipped")
            continue
        for d, part in zip(devs, shard(names, len(devs)), strict=False):
            tag = f"{v}_dev{d}"
            shards.append(Shard(v, d, part, work / f"{tag}.csv", work / f"{tag}.log"))
    if not shards:
        raise CkgenError(
            "nothing to profile: no profiler binaries with matching instances under "
            f"{build_dir_of(out)} "
            f"(run `ckgen build -o {out}` first)"
        )
    if only_shapes is not None:
        name, keep = only_shapes
        shapes = work / name
        work.mkdir(parents=True, exist_ok=True)
        write_shapes(shapes, [p for p in problems if p.name in set(keep)])
    # One process per device at a time; variants of one device run one after another.
    by_dev: dict[str, list[Shard]] = {}
    for s in shards:
        by_dev.setdefault(s.device, []).append(s)
    t0 = time.perf_counter()

    def start(s: Shard) -> None:
        cmd = [
            str(profiler_path(out, s.variant)),
            "--shapes",
            str(shapes),
            "--kernels",
            ",".join(s.instances),
            "--verify",
            verify,
            "--warmup",
            str(warmup),
            "--repeat",
            str(repeat),
            "--csv",
            str(s.csv),
        ]
        if datatypes:
            cmd += ["--datatype", ",".join(datatypes)]
        if shape_glob:
            cmd += ["--shape", shape_glob]
        if k_batches:
            cmd += ["--k-batch", ",".join(str(k) for k in k_batches)]
        if split_reduce != "auto":
            cmd += ["--split-reduce", split_reduce]
        if streamk_blocks:
            cmd += ["--streamk-blocks", str(streamk_blocks)]
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=s.device, HIP_VISIBLE_DEVICES=s.device)
        s.log.parent.mkdir(parents=True, exist_ok=True)
        s.csv.unlink(missing_ok=True)
        fh = open(s.log, "w")
        s.seconds = time.perf_counter()
        s.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, env=env)
        fh.close()
        if on_event:
            on_event(
                f"start {s.variant} on GPU {s.device}: {len(s.instances)} instance(s) (log {s.log})"
            )

    queues = {d: list(q) for d, q in by_dev.items()}
    running: dict[str, Shard] = {}
    for d, q in queues.items():
        start(q.pop(0))
        running[d] = by_dev[d][0]
    while running:
        time.sleep(0.2)
        for d, s in list(running.items()):
            assert s.proc is not None
            if s.proc.poll() is None:
                if time.perf_counter() - t0 > timeout:
                    s.proc.kill()
                    s.proc.wait()
                else:
                    continue
            s.rc = s.proc.returncode
            s.seconds = time.perf_counter() - s.seconds
            if on_event:
                on_event(f"done  {s.variant} on GPU {s.device}: exit {s.rc} in {s.seconds:.1f} s")
            del running[d]
            if queues[d]:
                nxt = queues[d].pop(0)
                start(nxt)
                running[d] = nxt
    rows: list[dict[str, str]] = []
    for s in shards:
        if s.csv.is_file():
            with open(s.csv, newline="") as f:
                rows += list(csv.DictReader(f))
    mark_best(rows)
    run = ProfileRun(rows=rows, shards=shards, csv=csv_path)
    write_rows(csv_path, rows)
    return run


def is_fused_instance(name: str) -> bool:
    """Whether a profiled instance has a fused epilogue: it computes more than the convolution,
    so its time is never the best plain convolution's (nor in the tuning database)."""
    try:
        return parse_instance_name(name).fused
    except ValueError:
        return False


def mark_best(rows: list[dict[str, str]]) -> None:
    """Recompute `best` over all shards: fastest timed, non-failed, unfused row per (shape,
    variant, datatype)."""
    best: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        r["best"] = "0"
        if not r.get("ms") or r.get("verified") in FAILED or is_fused_instance(r["instance"]):
            continue
        k = (r["shape"], r["variant"], r["datatype"])
        if k not in best or float(r["ms"]) < float(best[k]["ms"]):
            best[k] = r
    for r in best.values():
        r["best"] = "1"


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a profiler CSV, plain or gzipped (`.gz`). A file cut short (a profiler killed
    while writing, a gzip stream without its end) keeps its complete lines only."""
    return [r for _, r in _numbered_rows(path)[1]]


def _numbered_rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """read_rows' header and rows, each row with the line it ends on."""
    try:
        raw = Path(path).read_bytes()
    except OSError as ex:
        raise CkgenError(f"cannot read {path}: {ex}") from None
    if str(path).endswith(".gz"):
        raw = _gunzip(raw)
    text = raw.decode(errors="replace")
    if not text.endswith("\n"):  # the last line was being written
        text = text[: text.rfind("\n") + 1]
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows = [(reader.line_num, r) for r in reader if None not in r and None not in r.values()]
    return list(reader.fieldnames or []), rows


RESULT_COLUMNS = ("shape", "variant", "datatype", "instance", "ms")
# The numeric columns of profiler (and cuDNN) results, where present, and what they may hold
# besides nothing (the profiler leaves the times of an instance it could not run empty).
_RESULT_NUMBERS = {
    "ms": "a time in ms > 0",
    "cudnn_ms": "a time in ms > 0",
    "tflops": "a number >= 0",
    "gbps": "a number >= 0",
    "k_batch": "an integer >= 0",
}


def read_results(path: Path, need: Sequence[str] = RESULT_COLUMNS) -> list[dict[str, str]]:
    """read_rows for the commands that compute with the rows (tune --from-csv, check-heuristic,
    report): ConfigError (file:line: column) unless the header has the ``need`` columns and each
    numeric column (ms, cudnn_ms, tflops, gbps, k_batch) is empty or a finite number in range."""
    header, rows = _numbered_rows(path)
    missing = [c for c in need if c not in header]
    if missing:
        got = f"columns {brief(header)}" if header else "an empty file"
        raise ConfigError(
            Where(path, 1 if header else None),
            f"missing column(s) {', '.join(missing)} (need {','.join(need)}); got {got}",
        )
    for line, r in rows:
        for col, allowed in _RESULT_NUMBERS.items():
            v = r.get(col, "").strip()
            if v and not _result_number_ok(col, v):
                raise ConfigError(
                    Where(path, line, col), f"expected {allowed} (or empty), got {brief(v)}"
                )
    return [r for _, r in rows]


def _result_number_ok(col: str, v: str) -> bool:
    if col == "k_batch":
        return v.isascii() and v.isdigit() and len(v) < 10
    try:
        x = float(v)
    except ValueError:
        return False
    return math.isfinite(x) and (x > 0 if col.endswith("ms") else x >= 0)


def _gunzip(raw: bytes) -> bytes:
    """What of a gzip stream decompresses (a stream cut short gives its complete part)."""
    d = zlib.decompressobj(wbits=31)  # gzip framing
    try:
        return d.decompress(raw)
    except zlib.error:
        return b""


def write_rows(path: Path, rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols or ["shape", "variant", "datatype", "instance", "ms"])
        w.writeheader()
        w.writerows(rows)


def best_rows(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return [r for r in rows if r.get("best") == "1"]
