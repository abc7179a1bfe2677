"""Instance-list YAML files: the schema of their fields (schema) and a YAML loader that keeps
line numbers for error messages (loader)."""
