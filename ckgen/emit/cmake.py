"""CMakeLists.txt of a generated project, from CMakeLists.txt.in at ckgen's top level."""

from __future__ import annotations

from ckgen.emit.render import environment
from ckgen.model.vocab import Platform
from ckgen.resources import share_dir


def render_cmake(platform: Platform, gpu_targets: str, launcher: str, arch: str) -> str:
    """CMakeLists.txt for ``platform`` and its GPU targets, with an optional compiler launcher."""
    text = (share_dir() / "CMakeLists.txt.in").read_text()
    return (
        environment()
        .from_string(text)
        .render(platform=platform.value, gpu_targets=gpu_targets, launcher=launcher, arch=arch)
    )
