"""ckgen.torch.native's Python side without a GPU: the parameter encoding the C++ op path sends
back, the switch, and the fallback when the extension does not build (the native path itself:
tests/test_torch_native.py, GPU only)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: ckgen.torch tests need it")

from ckgen.torch import native  # noqa: E402


def test_conf_values_round_trip() -> None:
    # native_conv.cpp's op_conf: (n, stride...) (n, pad_l...) (n, pad_r...) (n, dil...) groups lib
    values = [2, 2, 1, 2, 1, 0, 2, 0, 1, 2, 3, 3, 4, 7]
    assert native._conf_from_values(values) == ((2, 1), (1, 0), (0, 1), (3, 3), 4, 7)
    assert native._conf_from_values([1, 2, 1, 0, 1, 0, 1, 1, 1, 0]) == (
        (2,),
        (0,),
        (0,),
        (1,),
        1,
        0,
    )


def test_conf_ids_are_stable() -> None:
    conf = ((1, 1), (0, 0), (0, 0), (1, 1), 1, 0)
    i = native.conf_id(conf)
    assert native.conf_id(((1, 1), (0, 0), (0, 0), (1, 1), 1, 0)) == i
    assert native._conf_list[i] == conf
    assert native.conf_id(((2, 2), (0, 0), (0, 0), (1, 1), 1, 0)) != i


@pytest.mark.parametrize("value,on", [("0", False), ("off", False), ("1", True), ("", True)])
def test_switch(monkeypatch: pytest.MonkeyPatch, value: str, on: bool) -> None:
    monkeypatch.setenv(native.ENV, value)
    assert native.enabled() is on


def test_a_failed_build_warns_once_and_keeps_the_python_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = []

    def fail(verbose: bool = False) -> None:
        calls.append(1)
        raise RuntimeError("no compiler")

    monkeypatch.setattr(native, "build", fail)
    monkeypatch.setattr(native, "_mod", None)
    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.delenv(native.ENV, raising=False)
    with pytest.warns(RuntimeWarning, match="no compiler"):
        assert native.module() is None
    assert native.module() is None and calls == [1]  # tried once


def test_turned_off_never_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "build", lambda verbose=False: pytest.fail("built"))
    monkeypatch.setattr(native, "_mod", None)
    monkeypatch.setattr(native, "_tried", False)
    monkeypatch.setenv(native.ENV, "0")
    assert native.module() is None
