"""From valid instances to files: the rendered project (render), its CMakeLists.txt (cmake) and
writing only what changed (output)."""
