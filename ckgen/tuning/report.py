"""Report: our best instance per shape vs cuDNN (speedup table in markdown, geomean per
variant), speedup and roofline plots (matplotlib, optional: skipped with a message)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ckgen.tuning.profile import RESULT_COLUMNS, best_rows, mark_best, read_results


@dataclass
class Row:
    shape: str
    variant: str
    datatype: str
    instance: str
    ms: float
    tflops: float
    gbps: float
    cudnn_ms: float | None

    @property
    def speedup(self) -> float | None:
        return None if not self.cudnn_ms else self.cudnn_ms / self.ms


def load(results: Path, cudnn: Path | None) -> list[Row]:
    rows = read_results(results, (*RESULT_COLUMNS, "best"))
    mark_best(rows)
    peer: dict[tuple[str, str, str], float] = {}
    if cudnn is not None:
        for r in read_results(cudnn, ("shape", "variant", "datatype", "cudnn_ms")):
            if r["cudnn_ms"]:
                peer[(r["shape"], r["variant"], r["datatype"])] = float(r["cudnn_ms"])
    out = []
    for r in best_rows(rows):
        out.append(
            Row(
                r["shape"],
                r["variant"],
                r["datatype"],
                r["instance"],
                float(r["ms"]),
                float(r.get("tflops") or 0),
                float(r.get("gbps") or 0),
                peer.get((r["shape"], r["variant"], r["datatype"])),
            )
        )
    order = {"forward": 0, "backward_data": 1, "backward_weight": 2}
    out.sort(key=lambda x: (order.get(x.variant, 9), x.datatype, x.shape))
    return out


def geomean(xs: Sequence[float]) -> float | None:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def markdown(rows: Sequence[Row]) -> str:
    lines = [
        "| variant | datatype | shape | instance | ms | TFLOPS | cuDNN ms | speedup |",
        "| --- | --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(
            f"| {r.variant} | {r.datatype} | {r.shape} | `{r.instance}` | {r.ms:.4f} | "
            f"{r.tflops:.1f} | "
            + (f"{r.cudnn_ms:.4f} | {r.speedup:.2f} |" if r.cudnn_ms else "- | - |")
        )
    lines += [
        "",
        "| variant | datatype | shapes | geomean speedup vs cuDNN |",
        "| --- | --- | ---: | ---: |",
    ]
    for key in sorted({(r.variant, r.datatype) for r in rows}):
        sub = [r for r in rows if (r.variant, r.datatype) == key]
        g = geomean([r.speedup for r in sub if r.speedup])
        lines.append(
            f"| {key[0]} | {key[1]} | {len(sub)} | {g:.3f} |"
            if g
            else f"| {key[0]} | {key[1]} | {len(sub)} | - |"
        )
    return "\n".join(lines) + "\n"


def plots(
    rows: Sequence[Row], out_dir: Path, peak_tflops: float, bandwidth_gbs: float
) -> list[Path] | str:
    """speedup.png, speedup_<variant>.png and roofline.png; a message (str) when matplotlib is
    missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "matplotlib is not installed: plots skipped (pip install matplotlib)"
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    sp = [r for r in rows if r.speedup]
    if sp:
        fig, ax = plt.subplots(figsize=(max(8, len(sp) * 0.22), 5))
        colors = {
            "forward": "tab:blue",
            "backward_data": "tab:orange",
            "backward_weight": "tab:green",
        }
        ax.bar(
            range(len(sp)),
            [r.speedup or 0.0 for r in sp],
            color=[colors.get(r.variant, "gray") for r in sp],
        )
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        ax.set_xticks(range(len(sp)))
        ax.set_xticklabels([f"{r.shape} ({r.variant[:6]})" for r in sp], rotation=90, fontsize=6)
        ax.set_ylabel("speedup vs cuDNN (cudnn_ms / ms)")
        ax.set_title("ckgen best instance vs cuDNN")
        fig.tight_layout()
        p = out_dir / "speedup.png"
        fig.savefig(p, dpi=120)
        plt.close(fig)
        written.append(p)
    for variant in ("forward", "backward_data", "backward_weight"):
        vp = _variant_plot(plt, [r for r in sp if r.variant == variant], variant, out_dir)
        if vp:
            written.append(vp)
    pts = [r for r in rows if r.gbps > 0 and r.tflops > 0]
    if pts:
        fig, ax = plt.subplots(figsize=(7, 5))
        ai = [r.tflops * 1e3 / r.gbps for r in pts]  # FLOP per byte
        lo, hi = min(ai) / 2, max(ai) * 2
        xs = [lo * (hi / lo) ** (i / 100) for i in range(101)]
        ax.plot(
            xs, [min(peak_tflops, x * bandwidth_gbs / 1e3) for x in xs], color="black", label="roof"
        )
        for v, c in (
            ("forward", "tab:blue"),
            ("backward_data", "tab:orange"),
            ("backward_weight", "tab:green"),
        ):
            sel = [(a, r.tflops) for a, r in zip(ai, pts, strict=False) if r.variant == v]
            if sel:
                ax.scatter([a for a, _ in sel], [t for _, t in sel], s=12, color=c, label=v)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP / minimum byte)")
        ax.set_ylabel("TFLOPS")
        ax.set_title(f"roofline (peak {peak_tflops:g} TFLOPS, {bandwidth_gbs:g} GB/s)")
        ax.legend(fontsize=8)
        fig.tight_layout()
        p = out_dir / "roofline.png"
        fig.savefig(p, dpi=120)
        plt.close(fig)
        written.append(p)
    return written


def _variant_plot(plt, rows: Sequence[Row], variant: str, out_dir: Path) -> Path | None:
    """speedup_<variant>.png: one bar per shape and datatype, shapes by cuDNN's time."""
    if not rows:
        return None
    dtypes = sorted({r.datatype for r in rows})
    shapes = sorted(
        {r.shape for r in rows}, key=lambda s: min(r.cudnn_ms or 0 for r in rows if r.shape == s)
    )
    by = {(r.shape, r.datatype): r.speedup for r in rows}
    width = 0.8 / len(dtypes)
    fig, ax = plt.subplots(figsize=(max(8, len(shapes) * 0.3), 5))
    for i, dt in enumerate(dtypes):
        xs = [j + (i - (len(dtypes) - 1) / 2) * width for j in range(len(shapes))]
        g = geomean([v for s in shapes if (v := by.get((s, dt)))])
        ax.bar(
            xs,
            [by.get((s, dt)) or 0 for s in shapes],
            width=width,
            label=f"{dt} (geomean {g:.2f})" if g else dt,
        )
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, rotation=90, fontsize=6)
    ax.set_ylabel("speedup vs cuDNN (cudnn_ms / ms)")
    ax.set_title(f"{variant}: ckgen best instance vs cuDNN (shapes by cuDNN time)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out_dir / f"speedup_{variant}.png"
    fig.savefig(p, dpi=120)
    plt.close(fig)
    return p
