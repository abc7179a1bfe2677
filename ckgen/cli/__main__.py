"""`python -m ckgen.cli`: the ckgen command line."""

from ckgen.cli import main

main()
