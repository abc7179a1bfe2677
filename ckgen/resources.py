"""Where ckgen's data (templates/, configs/, arch_specs.json) lives.

From a wheel the data sits in the package as ``ckgen/_share``; from a source checkout
(editable install, tests) it is the repository root beside the package.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path


@cache
def share_dir() -> Path:
    pkg = Path(__file__).resolve().parent
    installed = pkg / "_share"
    if (installed / "arch_specs.json").is_file():
        return installed
    return pkg.parent


def templates_dir() -> Path:
    return share_dir() / "templates"


def testing_dir() -> Path:
    """The GoogleTest suite's headers, copied into a generated project's testing/:
    ``tests/cpp/suite`` of a source checkout, ``testing`` of a wheel's share dir."""
    share = share_dir()
    return share / "testing" if share.name == "_share" else share / "tests" / "cpp" / "suite"


def configs_dir() -> Path:
    return share_dir() / "configs"


def tuning_dir() -> Path:
    """Tuning databases measured on a GPU (``<arch>_<gpu>.json``, made by ``ckgen tune
    --from-csv`` from a benchmark's profiles): ``CKGEN_TUNING_DB`` or ``Registry.load_tuning_db``
    takes one."""
    return configs_dir() / "tuning"


def arch_specs_path() -> Path:
    return share_dir() / "arch_specs.json"
