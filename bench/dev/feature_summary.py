"""Summarize feature_check perf lines: per (variant, shape) the 'before' time, the best new
instance, cuDNN and the speedup. Usage: python3 feature_summary.py perf.log"""
import re
import sys

rx = re.compile(r"PERF\s+(\S+)\s+(\S+)\s+(.+?)\s+kb=(\d+)\s+([\d.]+) us\s+([\d.]+) TFLOPS\s+cudnn\s+([\d.]+) us\s+x[\d.]+(?:\s+b2b\s+([\d.]+) us)?")
rows = {}
for line in open(sys.argv[1]):
    m = rx.search(line)
    if not m:
        continue
    v, s, label, kb, us, tf, cd, b2b = m.groups()
    rows.setdefault((v, s), []).append((float(us), label.strip(), int(kb), float(cd), float(b2b or 0)))
print("times: CUDA-graph replay (b2b = back-to-back launches of the best instance)")
print(f"{'variant':13s} {'shape':26s} {'before':>7s} {'best':>7s} {'b2b':>7s} {'cudnn':>7s} {'x_cudnn':>7s} {'x_before':>8s}  best instance")
for (v, s), r in rows.items():
    before = min([e[0] for e in r if "before" in e[1]] or [0])
    best = min(r)
    cd = best[3]
    print(f"{v:13s} {s:26s} {before:7.2f} {best[0]:7.2f} {best[4]:7.2f} {cd:7.2f} {cd / best[0]:7.2f} {before / best[0] if before else 0:8.2f}  {best[1]} kb={best[2]}")
