"""Bad inputs of the workflow commands (profile, tune, check-heuristic, report, build, emit-cmake):
shapes CSVs, profiler results CSVs, manifests and option values. Like tests/test_bad_inputs.py:
one clear message (file:line: column: what is wrong, what is allowed), exit code 2, no traceback,
and nothing written. No GPU, no build: every case is refused before a library or a profiler is
needed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from test_bad_inputs import assert_untouched, check_message, run_inproc, snapshot

from ckgen.model.problem import SHAPE_COLUMNS, load_shapes
from ckgen.resources import templates_dir

HEADER = ",".join(SHAPE_COLUMNS)
ROW = "a,2,1,2,8,16,8x8,3x3,1x1,1x1,1x1,1x1"
RESULTS = "shape,variant,datatype,instance,ms,tflops,gbps,verified,k_batch,best"
GOOD_RESULT = "a,forward,fp16,grouped_conv_fwd_x,0.5,1,1,pass,0,1"
# a small generated project: the tests set's 2D fp16 forward instances
GENERATE = [
    "generate",
    "--arch",
    "sm_90a",
    "--set",
    "tests",
    "--kernels",
    "grouped_conv_fwd_fp16_2d_*",
]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated (not built) project: what tune and emit-cmake read its manifest from."""
    out = tmp_path_factory.mktemp("proj") / "gen"
    code, output = run_inproc([*GENERATE, "-o", str(out), "-q"])
    assert code == 0, output
    return out


@pytest.fixture
def proj(project: Path, tmp_path: Path) -> Path:
    out = tmp_path / "gen"
    shutil.copytree(project, out, copy_function=shutil.copy2)
    return out


def refused(args: list[str], expect: list[str], *untouched: Path) -> str:
    before = [snapshot(p) for p in untouched]
    code, output = run_inproc(args)
    assert code == 2, output
    check_message(output, expect)
    assert sum(line.lower().startswith("error:") for line in output.splitlines()) == 1, output
    for p, snap in zip(untouched, before, strict=True):
        assert_untouched(snap, p)
    return output


# --- shapes CSV: the profiler's rules (host/shapes.hpp), with file:line: column ---------------

BASE = dict(zip(SHAPE_COLUMNS, ROW.split(","), strict=True))
NEED = "need name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right"


def shape(**cells: str) -> str:
    """A shapes file: the header and ROW with some cells changed."""
    return f"{HEADER}\n" + ",".join({**BASE, **cells}.values()) + "\n"


BAD_SHAPES: list[tuple[str, str | bytes, str]] = [
    (
        "few_fields",
        f"{HEADER}\na,2,1,1,8,8,8x8,3x3\n",
        ":2: expected 12 fields (one per header column), got 8",
    ),
    (
        "extra_field",
        f"{HEADER}\n{ROW},zzz\n",
        ":2: expected 12 fields (one per header column), got 13",
    ),
    ("quoted_comma", shape(name='"a,b"'), ":2: expected 12 fields"),
    ("not_utf8", shape(name="caf\xe9").encode("latin-1"), ":2: not UTF-8 text (byte 0xe9)"),
    ("bom", "\ufeff" + shape(), ":1: the file starts with a byte-order mark (U+FEFF)"),
    (
        "line_after_comments",
        f"# c\n\n{HEADER}\n# c2\n\n{ROW}\n" + shape(name="b", N="x")[len(HEADER) + 1 :],
        ":7: N: 'x' is not an integer",
    ),
    ("empty_cell", shape(N=""), ":2: N: '' is not an integer"),
    ("float", shape(C="8.5"), ":2: C: '8.5' is not an integer"),
    ("zero_C", shape(C="0"), ":2: C: 0 is out of range; allowed: 1 or more"),
    ("negative_N", shape(N="-1"), ":2: N: -1 is out of range; allowed: 1 or more"),
    ("huge_K", shape(K="9" * 5000), ":2: K: '999"),
    ("ndim_0", shape(ndim="0"), ":2: ndim: 0 is out of range; allowed: 1..3"),
    ("ndim_4", shape(ndim="4"), ":2: ndim: 4 is out of range; allowed: 1..3"),
    ("ndim_3_2d_sizes", shape(ndim="3"), ":2: input: '8x8' has 2 value(s), ndim is 3"),
    ("one_value_for_2d", shape(input="8"), ":2: input: '8' has 1 value(s), ndim is 2"),
    ("stride_0", shape(stride="0x1"), ":2: stride: '0x1': 0 is out of range; allowed: 1 or more"),
    ("dilation_0", shape(dilation="1x0"), ":2: dilation: '1x0': 0 is out of range"),
    (
        "pad_negative",
        shape(pad_left="-1x1"),
        ":2: pad_left: '-1x1': -1 is out of range; allowed: 0 or more",
    ),
    (
        "filter_too_large",
        shape(input="4x4", filter="9x9"),
        ":2: filter: the filter 9x9 (dilation 1x1) does not fit the input 4x4 padded by 1x1 / 1x1: "
        "the output is empty",
    ),
    (
        "dilated_filter_too_large",
        shape(dilation="5x5", pad_left="0x0", pad_right="0x0"),
        ":2: filter: the filter 3x3 (dilation 5x5) does not fit",
    ),
    (
        "duplicate_name",
        shape() + ROW + "\n",
        ":3: name: duplicate shape name 'a' (first on line 2)",
    ),
    ("empty_name", shape(name=""), ":2: name: empty shape name"),
    (
        "unknown_column",
        f"{HEADER},notes\n{ROW},x\n",
        f":1: unknown column 'notes'; allowed: {NEED[5:]} (and model, count)",
    ),
    ("duplicate_column", f"{HEADER},C\n{ROW},8\n", ":1: column 'C' appears twice in the header"),
    (
        "misspelt_column",
        shape().replace("pad_right", "pad_rigth"),
        f":1: missing column(s) pad_right ({NEED}); unknown column 'pad_rigth' "
        "(did you mean 'pad_right'?)",
    ),
    ("header_only", f"{HEADER}\n", ": no shapes: the file has a header and no rows"),
    ("empty", "", ": no header: the first line names the columns"),
]


@pytest.mark.parametrize(("name", "data", "expect"), BAD_SHAPES, ids=[c[0] for c in BAD_SHAPES])
def test_bad_shapes_file(name: str, data: str | bytes, expect: str, tmp_path: Path) -> None:
    """`ckgen profile` reads the shapes file before anything else (nothing built is needed to
    refuse it) and `tune` before profiling: the row the profiler would refuse is named, with its
    column, and no OUTPUT/profile is created."""
    shapes = tmp_path / f"{name}.csv"
    shapes.write_bytes(data if isinstance(data, bytes) else data.encode())
    out = tmp_path / "proj"
    out.mkdir()
    output = refused(
        ["profile", "-o", str(out), "--shapes", str(shapes)], [f"{shapes}{expect}"], out
    )
    assert len(output) < 600, output


def test_valid_shapes_spellings_load_alike(tmp_path: Path) -> None:
    """What the profiler accepts still loads, to the same problems: CRLF line ends, comment and
    blank lines, blanks around cells and 'x', columns in another order, the descriptive 'model'
    and 'count' columns."""
    plain = tmp_path / "plain.csv"
    plain.write_text(f"{HEADER}\n{ROW}\nb,1,2,1,4,8,17,3,2,1,0,1\n")
    cols = list(reversed(SHAPE_COLUMNS))
    rows = [ROW.split(","), "b,1,2,1,4,8,17,3,2,1,0,1".split(",")]
    shuffled = "\r\n".join(
        ["# a comment", "", " , ".join([*cols, "model", "count"])]
        + [" , ".join([*reversed(r), "m", "1"]).replace("8x8", "8 x 8") for r in rows]
    )
    other = tmp_path / "other.csv"
    other.write_text(shuffled + "\r\n", newline="")
    a, b = load_shapes(plain), load_shapes(other)
    assert [(p.name, p.key()) for p in a] == [(p.name, p.key()) for p in b]
    assert [p.name for p in a] == ["a", "b"]


def test_shipped_shapes_files_load() -> None:
    for f in sorted((templates_dir() / "project" / "shapes").glob("*.csv")):
        assert load_shapes(f), f


# --- profiler results CSV (tune --from-csv, report, check-heuristic) --------------------------

BAD_RESULTS: list[tuple[str, str, str]] = [
    (
        "ms_word",
        f"{RESULTS}\n{GOOD_RESULT.replace('0.5', 'fast')}\n",
        ":2: ms: expected a time in ms > 0 (or empty), got 'fast'",
    ),
    (
        "ms_zero",
        f"{RESULTS}\n{GOOD_RESULT.replace('0.5', '0')}\n",
        ":2: ms: expected a time in ms > 0 (or empty), got '0'",
    ),
    (
        "ms_negative",
        f"{RESULTS}\n{GOOD_RESULT.replace('0.5', '-1')}\n",
        ":2: ms: expected a time in ms > 0",
    ),
    (
        "ms_nan",
        f"{RESULTS}\n{GOOD_RESULT.replace('0.5', 'nan')}\n",
        ":2: ms: expected a time in ms > 0",
    ),
    (
        "ms_inf",
        f"{RESULTS}\n{GOOD_RESULT.replace('0.5', 'inf')}\n",
        ":2: ms: expected a time in ms > 0",
    ),
    (
        "k_batch_word",
        f"{RESULTS}\n{GOOD_RESULT.replace(',0,1', ',auto,1')}\n",
        ":2: k_batch: expected an integer >= 0 (or empty), got 'auto'",
    ),
    (
        "tflops_word",
        f"{RESULTS}\n{GOOD_RESULT.replace('0.5,1,', '0.5,lots,')}\n",
        ":2: tflops: expected a number >= 0 (or empty), got 'lots'",
    ),
    (
        "no_instance_column",
        "shape,variant,datatype,ms,best\na,forward,fp16,0.5,1\n",
        ":1: missing column(s) instance (need shape,variant,datatype,instance,ms",
    ),
    (
        "not_results",
        "hello world\n",
        ":1: missing column(s) shape, variant, datatype, instance, ms",
    ),
    ("empty", "", ": missing column(s) shape, variant, datatype, instance, ms"),
]


@pytest.mark.parametrize(("name", "text", "expect"), BAD_RESULTS, ids=[c[0] for c in BAD_RESULTS])
def test_bad_results_file_tune(
    name: str, text: str, expect: str, proj: Path, tmp_path: Path
) -> None:
    shapes = tmp_path / "s.csv"
    shapes.write_text(f"{HEADER}\n{ROW}\n")
    res = tmp_path / f"{name}.csv"
    res.write_text(text)
    db = tmp_path / "db" / "tuning_db.json"
    refused(
        ["tune", "-o", str(proj), "--shapes", str(shapes), "--from-csv", str(res), "--db", str(db)],
        [f"{res}{expect}"],
        proj,
    )
    assert not db.parent.exists()


@pytest.mark.parametrize("name", ["ms_word", "ms_zero", "tflops_word", "no_instance_column"])
def test_bad_results_file_report(name: str, tmp_path: Path) -> None:
    text, expect = next((t, e) for n, t, e in BAD_RESULTS if n == name)
    res = tmp_path / f"{name}.csv"
    res.write_text(text)
    rep = tmp_path / "rep"
    refused(["report", "--results", str(res), "-o", str(rep)], [f"{res}{expect}"])
    assert not rep.exists()


@pytest.mark.parametrize("value", ["slow", "0", "-1"])
def test_bad_cudnn_file_report(value: str, tmp_path: Path) -> None:
    res = tmp_path / "res.csv"
    res.write_text(f"{RESULTS}\n{GOOD_RESULT}\n")
    cud = tmp_path / "cudnn.csv"
    cud.write_text(f"shape,variant,datatype,cudnn_ms\na,forward,fp16,{value}\n")
    rep = tmp_path / "rep"
    refused(
        ["report", "--results", str(res), "--cudnn", str(cud), "-o", str(rep)],
        [f"{cud}:2: cudnn_ms: expected a time in ms > 0 (or empty), got '{value}'"],
    )
    assert not rep.exists()


def test_report_output_under_a_regular_file(tmp_path: Path) -> None:
    res = tmp_path / "res.csv"
    res.write_text(f"{RESULTS}\n{GOOD_RESULT}\n")
    f = tmp_path / "a_file"
    f.write_text("x\n")
    refused(
        ["report", "--results", str(res), "-o", str(f / "rep")], ["a_file is not a directory"], f
    )


def test_check_heuristic_names_bad_inputs_before_the_library(tmp_path: Path) -> None:
    """No build is needed to be told that the shapes, results or --json path are wrong."""
    out = tmp_path / "proj"
    out.mkdir()
    good_shapes, good_res = tmp_path / "s.csv", tmp_path / "r.csv"
    good_shapes.write_text(f"{HEADER}\n{ROW}\n")
    good_res.write_text(f"{RESULTS}\n{GOOD_RESULT}\n")
    bad_shapes, bad_res = tmp_path / "bs.csv", tmp_path / "br.csv"
    bad_shapes.write_text(f"{HEADER}\na,2,1,1,8,8,8x8\n")
    bad_res.write_text(f"{RESULTS}\n{GOOD_RESULT.replace('0.5', 'fast')}\n")
    f = tmp_path / "a_file"
    f.write_text("x\n")
    base = ["check-heuristic", "-o", str(out)]
    refused(
        [*base, "--results", str(good_res), "--shapes", str(bad_shapes)],
        [f"{bad_shapes}:2: expected 12 fields"],
    )
    refused(
        [*base, "--results", str(bad_res), "--shapes", str(good_shapes)],
        [f"{bad_res}:2: ms: expected a time in ms > 0"],
    )
    refused(
        [*base, "--results", str(good_res), "--shapes", str(good_shapes), "--json", f"{f}/q.json"],
        ["a_file is not a directory"],
        f,
    )


# --- tune writes a database only when it has one, and nothing before its checks ---------------


def tune_from_csv(proj: Path, shapes: Path, res: Path, db: str) -> list[str]:
    return ["tune", "-o", str(proj), "--shapes", str(shapes), "--from-csv", str(res), "--db", db]


def test_tune_without_timed_rows_writes_no_database(proj: Path, tmp_path: Path) -> None:
    """An empty database is not written, nor does it replace the one there."""
    shapes = tmp_path / "s.csv"
    shapes.write_text(f"{HEADER}\n{ROW}\n")
    res = tmp_path / "r.csv"
    res.write_text(f"{RESULTS}\nother,forward,fp16,k,0.5,1,1,pass,0,1\n")
    dbdir = tmp_path / "dbdir"
    dbdir.mkdir()
    (dbdir / "tuning_db.json").write_text('{"previous": true}\n')
    refused(
        tune_from_csv(proj, shapes, res, str(dbdir / "tuning_db.json")),
        [f"no timed results in {res} for the shapes of {shapes}", "is not written"],
        dbdir,
    )
    new = tmp_path / "new_db.json"
    refused(
        tune_from_csv(proj, shapes, res, str(new)),
        ["no timed results"],
    )
    assert not new.exists()


def test_tune_db_under_a_regular_file(proj: Path, tmp_path: Path) -> None:
    shapes = tmp_path / "s.csv"
    shapes.write_text(f"{HEADER}\n{ROW}\n")
    res = tmp_path / "r.csv"
    res.write_text(f"{RESULTS}\n{GOOD_RESULT}\n")
    f = tmp_path / "a_file"
    f.write_text("x\n")
    refused(
        tune_from_csv(proj, shapes, res, f"{f}/db.json"),
        ["a_file is not a directory"],
        f,
    )


def test_tune_with_nothing_built_leaves_no_profile_dir(proj: Path, tmp_path: Path) -> None:
    """Like `ckgen profile`: refused (nothing to profile) with no OUTPUT/profile left behind (the
    tuned shapes file is written only after every check)."""
    shapes = tmp_path / "s.csv"
    shapes.write_text(f"{HEADER}\n{ROW}\n")
    refused(["tune", "-o", str(proj), "--shapes", str(shapes)], ["ckgen build -o"], proj)
    assert not (proj / "profile").exists()


# --- manifests --------------------------------------------------------------------------------


def _edit_manifest(out: Path, edit: object) -> Path:
    man = out / "manifest.json"
    if isinstance(edit, str):
        man.write_text(edit)
    else:
        data = json.loads(man.read_text())
        assert callable(edit)
        edit(data)
        man.write_text(json.dumps(data))
    return man


BAD_MANIFESTS: list[tuple[str, object, str]] = [
    (
        "deep_nesting",
        "[" * 100_000 + "]" * 100_000,
        "not a ckgen manifest (JSON nesting is too deep)",
    ),
    ("no_arch", lambda d: d.pop("arch"), "not a ckgen manifest (no 'arch')"),
    ("arch_list", lambda d: d.update(arch=[]), "arch: expected a target name, got list []"),
    ("arch_unknown", lambda d: d.update(arch="sm_99z"), "arch: unknown arch 'sm_99z'"),
    (
        "gpu_targets_injection",
        lambda d: d.update(gpu_targets="90a;rm -rf"),
        "gpu_targets: 'rm -rf' is not a GPU target for nvidia",
    ),
]


@pytest.mark.parametrize(
    ("name", "edit", "expect"), BAD_MANIFESTS, ids=[c[0] for c in BAD_MANIFESTS]
)
def test_bad_manifest_emit_cmake(name: str, edit: object, expect: str, proj: Path) -> None:
    man = _edit_manifest(proj, edit)
    refused(["emit-cmake", "-o", str(proj)], [f"{man}: {expect}"], proj)


def test_generate_over_a_deeply_nested_manifest(proj: Path) -> None:
    """The previous manifest is only read to know what ckgen wrote: one it cannot parse is not
    trusted (a note), and the project is written."""
    _edit_manifest(proj, "[" * 100_000 + "]" * 100_000)
    code, output = run_inproc([*GENERATE, "-o", str(proj)])
    assert code == 0, output
    assert "is not a ckgen manifest: nothing it lists is removed" in output
    assert json.loads((proj / "manifest.json").read_text())["arch"] == "sm_90a"


# --- build: the option values that reach CMake are checked before anything is written ---------


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["--launcher", "ccache;rm"], "--launcher: 'ccache;rm' is not a program name or path"),
        (["--gpu-targets", "90a;rm"], "--gpu-targets: 'rm' is not a GPU target for nvidia"),
        (["--kernels", "../*"], "--kernels '../*': '../*' is not a name glob"),
    ],
    ids=["launcher", "gpu_targets", "kernels"],
)
@pytest.mark.parametrize("has_cmakelists", [False, True], ids=["fresh", "emitted"])
def test_build_checks_options_first(
    args: list[str], expect: str, has_cmakelists: bool, proj: Path
) -> None:
    if has_cmakelists:
        code, output = run_inproc(["emit-cmake", "-o", str(proj)])
        assert code == 0, output
    refused(["build", "-o", str(proj), *args], [expect], proj)
    assert not (proj / "build").exists()


# --- --arch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", " "])
def test_empty_arch_option_is_not_the_default(value: str) -> None:
    refused(
        ["list-instances", "--arch", value, "--set", "tests", "--format", "names"],
        [f"--arch {value!r}: empty; known: ", "sm_90a", "leave --arch out for the default"],
    )


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["generate", "--arch", "sm_90a", "--set", "tests", "-o", ""], "'-o' / '--output'"),
        (["report", "--results", "r.csv", "-o", " "], "'-o' / '--output'"),
        (["list-instances", "--arch", "sm_90a", "--config", ""], "'--config'"),
        (["tune", "--shapes", ""], "'--shapes'"),
    ],
    ids=["generate_output", "report_output", "config", "shapes"],
)
def test_empty_path_is_not_the_working_directory(
    args: list[str], expect: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-o "$DIR"` with DIR unset must not write a project into the working directory."""
    monkeypatch.chdir(tmp_path)
    refused(args, [expect, "is an empty path: give a"], tmp_path)
