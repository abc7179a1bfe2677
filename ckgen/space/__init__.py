"""The instance space: candidates expanded from the config files (expand), judged by the validity
rules (rules) with the resource estimates of each kernel family (estimate)."""
