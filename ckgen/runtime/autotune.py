"""Autotune on first use: time the cost model's top-k (kernel, k_batch) pairs of a problem on the
caller's stream, keep the fastest, remember it in the dispatcher's selection cache and in a
per-GPU cache file.

Switched on by ``CKGEN_AUTOTUNE=1`` or ``KernelLibrary.select(..., autotune=True)``; top-k from
``CKGEN_AUTOTUNE_TOPK`` (default 24). Nothing is timed while the stream captures a CUDA graph: the
known pick, else the heuristic, is used then.

Cache file: ``$CKGEN_AUTOTUNE_DIR``, else ``$XDG_CACHE_HOME/ckgen/autotune``, else
``~/.cache/ckgen/autotune``; one file per key
``<gpu name>_<sm count>sm_<sha256(key)[:16]>.json``, the key being the GPU name, SM count, driver
and runtime versions, ckgen's version and the kernel library's content hash (any change: another
file, measured afresh). The file is a tuning database of ``ckgen tune``'s format (version 1;
``KernelLibrary.load_tuning_db`` / ``CKGEN_TUNING_DB`` read it) with the key under
``"autotune"``. Writers take an fcntl lock beside it, merge with what is on disk, write a
temporary file and os.replace it, so concurrent processes never see a torn file; a corrupt file
is a warning and is rebuilt on the next write.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ckgen.model.problem import Problem

AUTOTUNE_ENV = "CKGEN_AUTOTUNE"
TOPK_ENV = "CKGEN_AUTOTUNE_TOPK"
DIR_ENV = "CKGEN_AUTOTUNE_DIR"
FORCE_DB_ENV = "CKGEN_TUNING_DB_FORCE"
# The cost model's first 24 pairs hold one within 3 % of the best default instance on >= 95 % of the
# model-zoo corpus layers in every variant; its first 8 on 73-82 % (docs/performance.md).
DEFAULT_TOPK = 24
# Launches per candidate: warm-up, then timed (mean).
WARMUP = 2
ITERS = 5


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def autotune_enabled() -> bool:
    return env_flag(AUTOTUNE_ENV)


def autotune_topk() -> int:
    raw = os.environ.get(TOPK_ENV, "").strip()
    if not raw:
        return DEFAULT_TOPK
    try:
        k = int(raw)
    except ValueError:
        k = 0
    if k < 1:
        warnings.warn(
            f"{TOPK_ENV}={raw!r} is not a positive integer: using {DEFAULT_TOPK}", stacklevel=3
        )
        return DEFAULT_TOPK
    return k


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/ckgen``, else ``~/.cache/ckgen``."""
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "ckgen"


def autotune_dir() -> Path:
    d = os.environ.get(DIR_ENV, "").strip()
    return Path(d).expanduser() if d else cache_root() / "autotune"


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-") or "gpu"


@dataclass(frozen=True)
class DeviceKey:
    """What an autotune result holds for: the GPU, its software and the kernels measured."""

    gpu: str
    sm_count: int
    driver: int
    runtime: int
    ckgen_version: str
    library_hash: str

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.as_json(), sort_keys=True).encode()).hexdigest()

    def file_name(self) -> str:
        return f"{slug(self.gpu)}_{self.sm_count}sm_{self.digest()[:16]}.json"


def file_hash(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def problem_key(variant: str, datatype: str, problem: Problem) -> str:
    """The exact key of an entry: variant, datatype and every problem field."""
    return f"{variant}/{datatype}/" + json.dumps(problem.to_json(), separators=(",", ":"))


def entry_key(e: dict[str, Any]) -> str | None:
    try:
        return problem_key(str(e["variant"]), str(e["datatype"]), Problem.from_json(e["problem"]))
    except (KeyError, TypeError, ValueError):
        return None


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive fcntl lock on ``<path>.lock`` (writers of one file, across processes)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(str(path) + ".lock", "a") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lk, fcntl.LOCK_UN)


def dumps_db(data: dict[str, Any]) -> str:
    """JSON text of a tuning database or autotune cache: the header keys one a line, then one
    line per entry (compact: a large database stays a few MB and diffs by entry)."""
    items = [f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data.items() if k != "entries"]
    if "entries" in data:
        rows = ",\n  ".join(json.dumps(e, separators=(",", ":")) for e in data["entries"])
        items.append(f'"entries": [\n  {rows}\n ]' if data["entries"] else '"entries": []')
    return "{\n " + ",\n ".join(items) + "\n}\n"


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Writes a temporary file beside path and renames it over path (readers see the old or the
    new file, never a part)."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(dumps_db(data))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_db_or_warn(path: Path) -> dict[str, Any] | None:
    """The tuning database at path; None when absent; None with a warning when it is not one
    (corrupt, truncated, another tool's): the caller rebuilds it."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as ex:
        warnings.warn(f"ckgen autotune cache {path}: cannot read ({ex}); rebuilding", stacklevel=3)
        return None
    try:
        db = json.loads(raw.decode())
    except ValueError as ex:  # (UnicodeDecodeError too)
        warnings.warn(f"ckgen autotune cache {path} is corrupt ({ex}); rebuilding", stacklevel=3)
        return None
    if not isinstance(db, dict) or not isinstance(db.get("entries"), list):
        warnings.warn(
            f"ckgen autotune cache {path} is not a ckgen tuning database; rebuilding", stacklevel=3
        )
        return None
    return db


class AutotuneStore:
    """The autotune results of one DeviceKey: an in-memory map over the cache file."""

    def __init__(self, path: Path, key: DeviceKey, arch: str = "") -> None:
        self.path = path
        self.key = key
        self.arch = arch
        self._entries: dict[str, dict[str, Any]] | None = None

    @classmethod
    def for_key(
        cls, key: DeviceKey, arch: str = "", directory: Path | None = None
    ) -> AutotuneStore:
        return cls((directory or autotune_dir()) / key.file_name(), key, arch)

    def _read(self) -> dict[str, dict[str, Any]]:
        db = read_db_or_warn(self.path)
        if db is None:
            return {}
        if db.get("autotune") != self.key.as_json():
            warnings.warn(
                f"ckgen autotune cache {self.path} was measured for another device or library "
                "key; ignoring it (rebuilt on the next write)",
                stacklevel=3,
            )
            return {}
        out: dict[str, dict[str, Any]] = {}
        for e in db["entries"]:
            k = entry_key(e) if isinstance(e, dict) else None
            if k is not None and isinstance(e.get("kernel"), str):
                out[k] = e
        return out

    def entries(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def get(self, variant: str, datatype: str, problem: Problem) -> dict[str, Any] | None:
        return self.entries().get(problem_key(variant, datatype, problem))

    def put(
        self,
        variant: str,
        datatype: str,
        problem: Problem,
        ranking: list[tuple[str, int, float]],
    ) -> dict[str, Any]:
        """Records a measured ranking ((kernel, k_batch, ms), any order) and writes the file:
        under the lock, merged with what other processes wrote meanwhile."""
        from ckgen.tuning.tune import db_header

        rk = sorted(ranking, key=lambda r: r[2])
        entry = {
            "variant": variant,
            "datatype": datatype,
            "shape": problem.name
            or "autotune_"
            + hashlib.sha256(problem_key(variant, datatype, problem).encode()).hexdigest()[:12],
            "problem": problem.to_json(),
            "kernel": rk[0][0],
            "k_batch": rk[0][1],
            "ms": rk[0][2],
            "ranking": [{"kernel": n, "k_batch": kb, "ms": ms} for n, kb, ms in rk],
        }
        k = problem_key(variant, datatype, problem)
        with locked(self.path):
            current = self._read()
            current[k] = entry
            db = db_header(self.arch, self.key.gpu, self.key.sm_count)
            db["autotune"] = self.key.as_json()
            db["entries"] = [current[x] for x in sorted(current)]
            write_json_atomic(self.path, db)
        self._entries = current
        return entry


# ------------------------------------------------------------------ shipped tuning databases
def db_device(path: Path) -> tuple[str, int]:
    """(gpu name, SM count) a tuning database says it was measured on ('' / 0: not said)."""
    try:
        db = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return "", 0
    if not isinstance(db, dict):
        return "", 0
    gpu = db.get("gpu") if isinstance(db.get("gpu"), str) else ""
    sm = db.get("sm_count") if isinstance(db.get("sm_count"), int) else 0
    return gpu or "", sm or 0


def device_mismatch(db_gpu: str, db_sm: int, gpu: str, sm: int) -> str:
    """Why a database measured on (db_gpu, db_sm) does not describe (gpu, sm); '' when it does
    or when either side is unknown."""
    if not db_gpu or not gpu:
        return ""
    if db_gpu.strip() != gpu.strip():
        return f"measured on {db_gpu!r}, this GPU is {gpu!r}"
    if db_sm and sm and db_sm != sm:
        return f"measured on {db_gpu!r} with {db_sm} SMs, this one has {sm}"
    return ""


def is_shipped(path: Path) -> bool:
    """Whether path is one of ckgen's shipped tuning databases (configs/tuning)."""
    from ckgen.resources import tuning_dir

    try:
        return Path(path).resolve().parent == tuning_dir().resolve()
    except OSError:
        return False
