"""The ckgen command line: a thin click layer over config -> expand -> render -> output.

app holds the click group; project, amd, workflow and tuning add their commands to it on import.
"""

from ckgen.cli import amd, project, tuning, workflow  # noqa: F401  (they register their commands)
from ckgen.cli.app import main

__all__ = ["main"]
