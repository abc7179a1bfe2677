"""The vocabulary and the objects ckgen reasons about: words, kernel instances and their names,
targets (arch_specs.json), convolution problems, and the limits of the template library."""
