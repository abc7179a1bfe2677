"""The bad-input corpus (tests/bad_inputs/, index in cases.yaml): every bad input gives one clear
message (file:line: key path: what is wrong), exit code 2, no traceback, and leaves the output
directory exactly as it was."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ckgen.cli import main
from ckgen.resources import configs_dir, templates_dir

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "bad_inputs"
CASES = yaml.safe_load((CORPUS / "cases.yaml").read_text())
FILE_CASES: list[dict[str, Any]] = CASES["files"]
CLI_CASES: list[dict[str, Any]] = CASES["cli"]
GEN_CASES: list[dict[str, Any]] = CASES["generated"]
MAX_SECONDS = 2.0  # per bad input: the answer comes at once...
MAX_BYTES = 200 * 1024 * 1024  # ...and without building anything large
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0
PROJECT_TEMPLATES = ("profiler.cpp.j2", "test.cpp.j2")


# --- snapshots -------------------------------------------------------------------------------

Snapshot = dict[str, tuple[str, bytes | None, int, int]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under root (root itself included): kind, bytes (files), mode, mtime_ns."""
    out: Snapshot = {}
    if not root.exists():
        return out
    for p in [root, *sorted(root.rglob("*"))]:
        st = p.lstat()
        kind = (
            "dir" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
        )
        out[p.relative_to(root).as_posix()] = (
            kind,
            p.read_bytes() if kind == "file" else None,
            stat.S_IMODE(st.st_mode),
            st.st_mtime_ns,
        )
    return out


def assert_untouched(before: Snapshot, root: Path) -> None:
    after = snapshot(root)
    assert set(after) == set(before), (
        f"{root}: entries added {sorted(set(after) - set(before))}, removed "
        f"{sorted(set(before) - set(after))}"
    )
    changed = [k for k in before if before[k] != after[k]]
    assert not changed, f"{root}: changed {changed[:10]}"
    assert not any(".ckgen-staging-" in k for k in after), "staging leftovers"


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real project from a successful `ckgen generate --set tests --arch sm_90a`."""
    missing = [t for t in PROJECT_TEMPLATES if not (templates_dir() / "project" / t).is_file()]
    if missing:
        pytest.skip(
            f"templates/project/{', '.join(missing)} not there yet: cannot generate the reference "
            "project"
        )
    out = tmp_path_factory.mktemp("generated") / "gen"
    res = CliRunner().invoke(
        main, ["generate", "--set", "tests", "--arch", "sm_90a", "-o", str(out), "-q"]
    )
    assert res.exit_code == 0, res.output
    assert (out / "manifest.json").is_file()
    return out


@pytest.fixture
def places(tmp_path: Path, generated: Path) -> dict[str, Path]:
    """The placeholders of cases.yaml, fresh for every case (copies keep mtimes)."""
    out = tmp_path / "out"
    shutil.copytree(generated, out, copy_function=shutil.copy2)
    empty = tmp_path / "empty"
    empty.mkdir()
    file = tmp_path / "a_file"
    file.write_text("not a directory\n")
    badman = tmp_path / "badman"
    badman.mkdir()
    (badman / "manifest.json").write_text("{ not json\n")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    return {
        "out": out,
        "empty": empty,
        "file": file,
        "badman": badman,
        "ro": ro,
        "corpus": CORPUS,
        "configs": configs_dir(),
    }


def fill(args: list[str], places: dict[str, Path]) -> list[str]:
    return [a.format(**{k: str(v) for k, v in places.items()}) for a in args]


def run_inproc(args: list[str]) -> tuple[int, str]:
    res = CliRunner().invoke(main, args)
    # A traceback never escapes as an exception either.
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res.exit_code, res.output


def run_bounded(args: list[str]) -> tuple[int, str]:
    """run_inproc, asserting the answer took under MAX_SECONDS and MAX_BYTES of Python memory
    (tracemalloc's peak: everything ckgen builds is a Python object)."""
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        out = run_inproc(args)
        secs = time.perf_counter() - t0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    if os.environ.get("CKGEN_TEST_REPORT"):
        with open(os.environ["CKGEN_TEST_REPORT"], "a") as rep:
            rep.write(f"{' '.join(args)[-60:]} {secs:.3f} s {peak / 2**20:.1f} MiB\n")
    assert secs < MAX_SECONDS, f"{secs:.2f} s"
    assert peak < MAX_BYTES, f"{peak / 2**20:.0f} MiB"
    return out


# A small launcher between the test process and the CLI: Linux starts a child's peak resident
# size (ru_maxrss) at its parent's size when it forks, so a CLI run forked straight from a pytest
# process that has grown (torch imported by other tests) would report pytest's size. The launcher
# (python -S, a few MB) forks the CLI, waits for it and writes its rusage peak to argv[1].
_LAUNCHER = (
    "import os, sys\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "    os.execv(sys.argv[2], sys.argv[2:])\n"
    "_, status, usage = os.wait4(pid, 0)\n"
    "with open(sys.argv[1], 'w') as f:\n"
    "    f.write(str(usage.ru_maxrss))\n"
    "sys.exit(os.waitstatus_to_exitcode(status) & 0xFF)\n"
)


def run_measured(args: list[str], limit_s: float = 60.0) -> tuple[int, str, float, int]:
    """``python -m ckgen.cli ARGS`` in its own process: exit code, output, wall seconds and peak
    resident bytes of that process (wait4's rusage, taken by _LAUNCHER)."""
    env = {k: v for k, v in os.environ.items() if k != "CKGEN_DEBUG"}
    with (
        open(os.devnull, "rb") as devnull,
        tempfile.TemporaryFile() as buf,
        tempfile.TemporaryDirectory() as tmp,
    ):
        peak_file = Path(tmp) / "peak"
        cmd = [sys.executable, "-S", "-c", _LAUNCHER, str(peak_file)]
        t0 = time.perf_counter()
        p = subprocess.Popen(
            [*cmd, sys.executable, "-m", "ckgen.cli", *args],
            stdin=devnull,
            stdout=buf,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            p.wait(timeout=limit_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            p.wait()
        secs = time.perf_counter() - t0
        buf.seek(0)
        output = buf.read().decode("utf-8", "replace")
        peak_kb = int(peak_file.read_text() or 0) if peak_file.is_file() else 0
    return p.returncode, output, secs, peak_kb * 1024


def run_proc(args: list[str]) -> tuple[int, str]:
    env = {k: v for k, v in os.environ.items() if k != "CKGEN_DEBUG"}
    p = subprocess.run(
        [sys.executable, "-m", "ckgen.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return p.returncode, p.stdout + p.stderr


def check_message(output: str, fragments: list[str]) -> None:
    assert "Traceback" not in output, output
    assert "internal error" not in output, output
    for frag in fragments:
        assert frag in output, f"missing {frag!r} in:\n{output}"


def file_fragments(case: dict[str, Any]) -> list[str]:
    frags = list(case["expect"])
    if "line" in case:
        loc = f"{case['file']}:{case['line']}: "
        frags.insert(0, loc + (f"{case['path']}: " if case.get("path") else ""))
    return frags


# --- the corpus ------------------------------------------------------------------------------


def test_corpus_size_and_index_agree() -> None:
    on_disk = sorted(
        p.relative_to(CORPUS).as_posix() for p in CORPUS.rglob("*.yaml") if p.name != "cases.yaml"
    )
    indexed = sorted(c["file"] for c in FILE_CASES)
    assert indexed == on_disk, "every corpus file has exactly one case in cases.yaml"
    assert len(indexed) == len(set(indexed))
    assert len(on_disk) >= 45
    assert len(FILE_CASES) + len(CLI_CASES) + len(GEN_CASES) >= 100
    assert len({c["id"] for c in GEN_CASES}) == len(GEN_CASES)
    assert len({c["id"] for c in CLI_CASES}) == len(CLI_CASES)


@pytest.mark.parametrize("case", FILE_CASES, ids=[c["file"] for c in FILE_CASES])
def test_bad_file(case: dict[str, Any], places: dict[str, Path]) -> None:
    out = places["out"]
    before = snapshot(out)
    code, output = run_bounded(
        ["generate", "--arch", "sm_90a", "--config", str(CORPUS / case["file"]), "-o", str(out)]
    )
    assert code == 2, output
    check_message(output, file_fragments(case))
    assert sum(line.startswith("error:") for line in output.splitlines()) == 1, (
        f"one message, not several:\n{output}"
    )
    assert_untouched(before, out)


@pytest.mark.parametrize("case", CLI_CASES, ids=[c["id"] for c in CLI_CASES])
def test_bad_command_line(case: dict[str, Any], places: dict[str, Path]) -> None:
    if case.get("needs_non_root") and IS_ROOT:
        pytest.skip(
            "running as root: a 0555 directory is still writable; output_under_regular_file covers "
            "it"
        )
    keep = {name: snapshot(places[name]) for name in case.get("untouched", [])}
    code, output = run_bounded(fill(case["args"], places))
    assert code == 2, output
    check_message(output, case["expect"])
    for name, before in keep.items():
        assert_untouched(before, places[name])


# A few of each kind through a real process: exit status 2 and no traceback on stderr.
PROC_FILES = [
    "syntax_tab_indent.yaml",
    "unknown_top_key_instnaces.yaml",
    "pipeline_injection.yaml",
    "include_dotdot.yaml",
    "empty_expansion_space.yaml",
    "syntax_not_utf8.yaml",
]
PROC_CLI = [
    "unknown_arch",
    "unknown_variant",
    "kernels_glob_matches_nothing",
    "output_under_regular_file",
    "emit_cmake_without_generate",
    "emit_cmake_gpu_targets_injection",
    "emit_cmake_launcher_injection",
]


@pytest.mark.parametrize("name", PROC_FILES)
def test_bad_file_subprocess(name: str, places: dict[str, Path]) -> None:
    case = next(c for c in FILE_CASES if c["file"] == name)
    out = places["out"]
    before = snapshot(out)
    for cmd in (["generate", "-o", str(out)], ["list-instances"]):
        code, output = run_proc([*cmd, "--arch", "sm_90a", "--config", str(CORPUS / name)])
        assert code == 2, output
        check_message(output, file_fragments(case))
    assert_untouched(before, out)


@pytest.mark.parametrize("case_id", PROC_CLI)
def test_bad_command_line_subprocess(case_id: str, places: dict[str, Path]) -> None:
    case = next(c for c in CLI_CASES if c["id"] == case_id)
    keep = {name: snapshot(places[name]) for name in case.get("untouched", [])}
    code, output = run_proc(fill(case["args"], places))
    assert code == 2, output
    check_message(output, case["expect"])
    for name, before in keep.items():
        assert_untouched(before, places[name])


# --- the paths around the corpus --------------------------------------------------------------


def test_good_run_after_bad_runs_still_works(places: dict[str, Path]) -> None:
    """The pre-populated directory is a real project: regenerating it changes nothing."""
    out = places["out"]
    before = snapshot(out)
    code, output = run_inproc(["generate", "--set", "tests", "--arch", "sm_90a", "-o", str(out)])
    assert code == 0, output
    assert "0 written, 0 removed" in output
    assert_untouched(before, out)


def test_blocked_target_fails_before_the_first_write(
    places: dict[str, Path], tmp_path: Path
) -> None:
    """A file standing where the generated tree needs a directory is found before anything is
    written (no half-written project)."""
    out = places["out"]
    shutil.rmtree(out / "instances" / "forward")
    (out / "instances" / "forward").write_text("in the way\n")
    first = sorted(p for p in (out / "include").rglob("*") if p.is_file())[0]
    first.write_text("// stale: would be replaced before instances/ is reached\n")
    before = snapshot(out)
    code, output = run_inproc(["generate", "--set", "tests", "--arch", "sm_90a", "-o", str(out)])
    assert code == 2, output
    assert_untouched(before, out)
    check_message(output, ["is not a directory"])


def test_config_file_name_cannot_inject_cpp(places: dict[str, Path], tmp_path: Path) -> None:
    """The config path is echoed into generated C++ comments: a newline in a file name must not
    end the comment."""
    evil_dir = tmp_path / "cfg"
    evil_dir.mkdir()
    evil = evil_dir / "x\n#error injected\n.yaml"
    shutil.copy(configs_dir() / "forward" / "tests.yaml", evil)
    out = tmp_path / "gen"
    code, output = run_inproc(
        ["generate", "--arch", "sm_90a", "--config", str(evil), "-o", str(out), "-q"]
    )
    assert code == 0, output
    for p in out.rglob("*"):
        if p.is_file() and p.suffix in (".hpp", ".cpp", ".json", ".cmake"):
            assert "\n#error injected" not in p.read_text(), p


def test_unexpected_exception_is_an_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug (not bad input) gives one 'internal error' line and exit code 1, no traceback."""
    import ckgen.cli.project as cli_mod

    def boom(*a: Any, **k: Any) -> None:
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(cli_mod, "expansion", boom)
    monkeypatch.delenv("CKGEN_DEBUG", raising=False)
    code, output = run_inproc(["list-instances", "--arch", "sm_90a"])
    assert code == 1, output
    check_message(
        output.replace("internal error", "INTERNAL"),
        ["INTERNAL", "RuntimeError: simulated bug", "CKGEN_DEBUG=1"],
    )


def test_markup_in_messages_is_printed_as_written(tmp_path: Path) -> None:
    """Messages go through rich: '[a, b, c]' and '[divisible]' must not be eaten as markup."""
    code, output = run_inproc(
        ["list-instances", "--arch", "sm_90a", "--config", str(CORPUS / "vector_pair.yaml")]
    )
    assert code == 2
    assert "[a, b, c]" in output


def test_unwritable_output_dir_simulated(
    places: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """output_read_only_dir needs a non-root user; this runs everywhere by denying write access
    to the directory the way os.access would for a 0555 directory."""
    import ckgen.emit.output as output_mod

    ro = places["ro"]
    real_access = os.access

    def access(path: Any, mode: int, *a: Any, **k: Any) -> bool:
        if Path(path) == ro and mode & os.W_OK:
            return False
        return real_access(path, mode, *a, **k)

    monkeypatch.setattr(output_mod.os, "access", access)
    before = snapshot(ro)
    code, output = run_inproc(
        ["generate", "--arch", "sm_90a", "--set", "tests", "-o", str(ro / "gen")]
    )
    assert code == 2, output
    check_message(output, [f"output directory {ro / 'gen'} is not writable ({ro})"])
    assert_untouched(before, ro)


# --- hostile inputs written at test time ------------------------------------------------------


def _alias_bomb(under: str) -> str:
    rows = ["      - &l0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, 9):
        rows.append(f"      - &l{n} [" + ", ".join([f"*l{n - 1}"] * 10) + "]")
    rows.append("      - [" + ", ".join(["*l8"] * 10) + "]")
    return "variant: forward\n" + under + "\n".join(rows) + "\n"


def _space(fields: dict[str, list[Any]]) -> str:
    body = "".join(f"    {k}: {v!r}\n".replace("'", "") for k, v in fields.items())
    return "variant: forward\nspaces:\n  - warp_tile: [16, 16, 16]\n" + body


def _vectors(n: int) -> list[list[int]]:
    return [[a, b, c] for a in range(1, 17) for b in range(1, 17) for c in range(1, 17)][:n]


GENERATORS: dict[str, Callable[[], str | bytes]] = {
    "alias_bomb": lambda: _alias_bomb("instances:\n  - tile:\n"),
    "alias_bomb_space": lambda: _alias_bomb("spaces:\n  - pipeline:\n"),
    "alias_wide": lambda: (
        "variant: forward\ninstances:\n  - tile: [&w ["
        + ", ".join(["0"] * 1000)
        + "], "
        + ", ".join(["*w"] * 200)
        + "]\n"
    ),
    "deep_flow": lambda: (
        "variant: forward\ninstances:\n  - tile: " + "[" * 100_000 + "]" * 100_000 + "\n"
    ),
    "deep_block": lambda: (
        "variant: forward\n"
        + "".join("  " * n + f"k{n}:\n" for n in range(100))
        + "  " * 100
        + "v: 1\n"
    ),
    "too_large": lambda: b"variant: forward\n" + b"#" * (9 * 1024 * 1024 - 18) + b"\n",
    "space_1e10": lambda: _space(
        {
            "tile": [[m, 64, 32] for m in range(1, 201)],
            "vector": _vectors(100),
            "k_batch": list(range(50)),
            "groups_to_merge": list(range(1, 101)),
            "stages": list(range(1, 11)),
            "waves": [[w, 1, 1] for w in range(1, 11)],
        }
    ),
    "space_over_cap": lambda: _space(
        {"k_batch": list(range(65)), "groups_to_merge": list(range(1, 771)), "stages": [2, 3]}
    ),
    "defaults_product": lambda: (
        "variant: forward\ndefaults:\n  k_batch: "
        + repr(list(range(65)))
        + "\n  groups_to_merge: "
        + repr(list(range(1, 1025)))
        + "\n  stages: "
        + repr(list(range(1, 17)))
        + "\ninstances:\n  - {tile: [64, 64, 32]}\n"
    ),
    "long_string": lambda: "variant: forward\ninstances:\n  - pipeline: " + "a" * 200_000 + "\n",
    "long_list": lambda: (
        "variant: forward\ninstances:\n  - tile: [" + ", ".join(["1"] * 100_000) + "]\n"
    ),
    "long_key": lambda: "variant: forward\ninstances:\n  - ? " + "k" * 100_000 + "\n    : 1\n",
    "long_glob": lambda: (
        "variant: forward\ninstances:\n  - {}\ninclude: ['" + "a" * 100_000 + "/']\n"
    ),
    "huge_int": lambda: "variant: forward\ninstances:\n  - ndim: 1" + "0" * 100_000 + "\n",
    "many_bad_chars": lambda: (
        "variant: forward\ninstances:\n  - {}\ninclude: ['"
        + "".join(chr(0x400 + n) for n in range(200))
        + "']\n"
    ),
    "resources_large": lambda: (
        b'{"arch": "sm_90a", "instances": {}, "pad": "' + b"x" * (9 * 1024 * 1024) + b'"}\n'
    ),
    "resources_deep": lambda: "[" * 200_000 + "]" * 200_000,
    "resources_long_value": lambda: (
        '{"arch": "sm_90a", "instances": {"k": {"lds_bytes": ['
        + ", ".join(["0"] * 500_000)
        + "]}}}"
    ),
}


@pytest.mark.parametrize("case", GEN_CASES, ids=[c["id"] for c in GEN_CASES])
def test_hostile_input(case: dict[str, Any], places: dict[str, Path], tmp_path: Path) -> None:
    """Alias bombs, deep nesting, oversized files and spaces, unbounded values: refused at once
    (exit 2, under MAX_SECONDS and MAX_BYTES resident, output directory untouched), with a
    message that never echoes the whole value."""
    data = GENERATORS[case["gen"]]()
    cmd = case.get("cmd", "list")
    f = tmp_path / ("hostile.json" if cmd == "resources" else "hostile.yaml")
    f.write_bytes(data if isinstance(data, bytes) else data.encode())
    out = places["out"]
    before = snapshot(out)
    args = (
        ["generate", "--arch", "sm_90a", "--set", "tests", "--resources", str(f), "-o", str(out)]
        if cmd == "resources"
        else ["generate", "--arch", "sm_90a", "--config", str(f), "-o", str(out)]
    )
    code, output, secs, rss = run_measured(args)
    assert code == 2, output[:2000]
    loc = f"{f}:{case['line']}: " if "line" in case else f"{f}"
    if "path" in case:
        loc += case["path"] + ": "
    check_message(output, [loc, *case["expect"]])
    assert len(output) < 2000, f"the message echoes the input ({len(output)} characters)"
    assert secs < MAX_SECONDS, f"{secs:.2f} s"
    assert rss < MAX_BYTES, f"{rss / 2**20:.0f} MiB resident"
    assert_untouched(before, out)
    if os.environ.get("CKGEN_TEST_REPORT"):
        with open(os.environ["CKGEN_TEST_REPORT"], "a") as rep:
            rep.write(f"{case['id']} {secs:.3f} s {rss / 2**20:.0f} MiB\n")


def test_variant_option_supplies_a_missing_variant(tmp_path: Path) -> None:
    """A file without 'variant:' (outside configs/<variant>/) takes the one --variant given."""
    code, output = run_inproc(
        [
            "list-instances",
            "--arch",
            "sm_90a",
            "--variant",
            "backward_data",
            "--config",
            str(CORPUS / "variant_missing.yaml"),
            "--format",
            "names",
        ]
    )
    assert code == 0, output
    names = output.split()
    assert names and all(n.startswith("grouped_conv_bwd_data_") for n in names), output
