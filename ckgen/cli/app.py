"""The `ckgen` click group: the entry point and the one place errors become exit codes."""

from __future__ import annotations

import os
import sys
from typing import Any

import click
from rich.markup import escape

from ckgen import __version__
from ckgen.cli.common import err_console
from ckgen.errors import CkgenError


def _fail(ex: CkgenError) -> None:
    # The message is text, not markup: '[M, N, K]' or a glob like '[ab]*' must print as written.
    err_console.print(f"[bold red]error:[/] {escape(str(ex))}", markup=True, soft_wrap=True)
    sys.exit(ex.exit_code)


INTERNAL_ERROR_EXIT = 1


class CkgenGroup(click.Group):
    """Turns CkgenError into one clear line and exit code 2 (no traceback). Anything else that
    escapes a command is a bug in ckgen: one 'internal error' line and exit code 1, with the
    traceback only when CKGEN_DEBUG is set."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except CkgenError as ex:
            _fail(ex)
        except (
            click.exceptions.ClickException,
            click.exceptions.Exit,
            click.exceptions.Abort,
            BrokenPipeError,
        ):
            raise
        except Exception as ex:  # noqa: BLE001 - the last line of defence against tracebacks
            if os.environ.get("CKGEN_DEBUG"):
                raise
            err_console.print(
                f"[bold red]internal error:[/] {escape(type(ex).__name__)}: {escape(str(ex))}\n"
                "This is a bug in ckgen; rerun with CKGEN_DEBUG=1 for the traceback and report it.",
                markup=True,
                soft_wrap=True,
            )
            sys.exit(INTERNAL_ERROR_EXIT)


@click.group(
    cls=CkgenGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(__version__, prog_name="ckgen")
def main() -> None:
    """ckgen: generate grouped-convolution kernels (forward, backward_data, backward_weight)
    from YAML instance lists and arch_specs.json, plus the CMake project that builds them.

    \b
    Typical session, in an empty directory:
      ckgen generate --variant backward_data   # -> ckgen-out/
      ckgen list-instances                     # every variant's default instances
      ckgen emit-cmake                         # ckgen-out/CMakeLists.txt, from its manifest
      cmake -S ckgen-out -B ckgen-out/build -G Ninja && ninja -C ckgen-out/build

    \b
    Defaults: --arch is $CKGEN_ARCH, else the GPU found on this machine (nvidia-smi,
    rocminfo, amd-smi), else sm_90a; -o is ckgen-out/.
    """
