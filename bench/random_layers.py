"""Random conv layers from the model zoo's families, seeded, as a shapes CSV: for judging kernels
on layers nobody tuned on (issue 50).

    python3 bench/random_layers.py --seed 1 --count 100 -o bench/shapes/random_seed1.csv
    python3 bench/random_layers.py --seed 7 -o rand.csv --map rand_map.csv   # + a corpus map

--map writes the layers as a corpus map (bench/corpus_shapes.py's corpus_map.csv: shape, row,
model, count), each layer its own row and its family and ndim the "model" (dense_2d, ...), so
bench/device_corpus.sh (SHAPES_CSV / MAP_CSV) and bench/heuristic_eval.py take them as a corpus.

Families: dense (one group), grouped (2..64 channels per group), depthwise (1 channel per group,
channel multiplier 1 or 2) and pointwise (1x1); 1D, 2D and 3D; filter 1..11 per dimension
(mostly square, some 1xk / kx1 / mixed), stride 1..3, dilation 1..3, "same" / zero / odd
padding (asymmetric at times), channels per group 1..64, batch 1..32. Each layer is shrunk
(batch, then its largest spatial dim, then its groups) until it is at most MAX_FLOP and every
tensor (input, output, weight) at most MAX_TENSOR_BYTES in fp32; layers under MIN_FLOP are
drawn again. Only integer draws of random.Random(seed): the same seed gives the same file on
every Python. The CSV is the profiler's shapes format (C and K per group); no ckgen import.
"""

from __future__ import annotations

import argparse
import random
import sys
from dataclasses import dataclass
from pathlib import Path

MAX_FLOP = 2e9
MIN_FLOP = 1e6
MAX_TENSOR_BYTES = 256 << 20
ELEM_BYTES = 4  # fp32, the widest datatype
HEADER = "name,ndim,G,N,C,K,input,filter,stride,dilation,pad_left,pad_right"
FAMILIES = (("dense", 3), ("grouped", 3), ("depthwise", 3), ("pointwise", 2))
# Spatial sizes per ndim, as (lo, hi) buckets drawn uniformly, then an integer within: roughly
# log-uniform. 3D: the first bucket list is the time dimension, the second height and width.
SIZES = {
    1: ((16, 64), (65, 256), (257, 1024), (1025, 4096), (4097, 16384)),
    2: ((7, 16), (17, 32), (33, 64), (65, 128), (129, 224)),
    3: ((4, 8), (9, 16), (17, 32)),
}
SIZES_3D_HW = ((7, 16), (17, 32), (33, 64), (65, 112))


@dataclass
class Layer:
    family: str
    ndim: int
    G: int
    N: int
    C: int
    K: int
    input: list[int]
    filter: list[int]
    stride: list[int]
    dilation: list[int]
    pad_l: list[int]
    pad_r: list[int]

    def output(self) -> list[int]:
        out = []
        for i, f, s, d, pl, pr in zip(
            self.input,
            self.filter,
            self.stride,
            self.dilation,
            self.pad_l,
            self.pad_r,
            strict=True,
        ):
            span = i + pl + pr - ((f - 1) * d + 1)
            out.append(span // s + 1 if span >= 0 else 0)
        return out

    def flops(self) -> float:
        return 2.0 * self.G * self.N * self.C * self.K * _prod(self.filter) * _prod(self.output())

    def max_tensor_bytes(self) -> int:
        g = self.G
        elems = (
            self.N * g * self.C * _prod(self.input),
            self.N * g * self.K * _prod(self.output()),
            g * self.K * self.C * _prod(self.filter),
        )
        return max(elems) * ELEM_BYTES

    def min_input(self, i: int) -> int:
        """The smallest input size along dim i: at least the filter, and a non-empty output."""
        eff = (self.filter[i] - 1) * self.dilation[i] + 1
        return max(self.filter[i], eff - self.pad_l[i] - self.pad_r[i])

    def fits(self) -> bool:
        return self.flops() <= MAX_FLOP and self.max_tensor_bytes() <= MAX_TENSOR_BYTES


def _prod(v: list[int]) -> int:
    p = 1
    for x in v:
        p *= x
    return p


def _pick(rng: random.Random, weighted) -> object:
    total = sum(w for _, w in weighted)
    r = rng.randrange(total)
    for v, w in weighted:
        if r < w:
            return v
        r -= w
    raise AssertionError


def _size(rng: random.Random, buckets) -> int:
    lo, hi = buckets[rng.randrange(len(buckets))]
    return rng.randint(lo, hi)


def _channels(rng: random.Random, lo: int) -> int:
    """Channels per group in lo..64, half the time a multiple of 8 (as real layers are)."""
    if rng.randrange(2) and lo <= 8:
        return 8 * rng.randint(1, 8)
    return rng.randint(lo, 64)


def _spatial(rng: random.Random, nd: int, lo: int, hi: int, square: int) -> list[int]:
    """nd values in lo..hi, all equal `square` times in 4."""
    if rng.randrange(4) < square:
        return [rng.randint(lo, hi)] * nd
    return [rng.randint(lo, hi) for _ in range(nd)]


def draw(rng: random.Random) -> Layer:
    fam = _pick(rng, FAMILIES)
    nd = _pick(rng, ((1, 2), (2, 5), (3, 3)))
    if fam == "dense":
        G, C, K = 1, _channels(rng, 1), _channels(rng, 1)
    elif fam == "grouped":
        G, C, K = rng.randint(2, 64), _channels(rng, 2), _channels(rng, 2)
    elif fam == "depthwise":
        G, C, K = rng.randint(8, 1024), 1, _pick(rng, ((1, 3), (2, 1)))
    else:
        G = 1 if rng.randrange(3) else rng.randint(2, 16)
        C, K = _channels(rng, 1), _channels(rng, 1)
    if fam == "pointwise":
        filt = [1] * nd
        dil = [1] * nd
    else:
        filt = _spatial(rng, nd, 1, 11, 3)
        if filt == [1] * nd:
            filt = _spatial(rng, nd, 2, 11, 3)
        dil = [1] * nd if rng.randrange(3) else _spatial(rng, nd, 1, 3, 3)
    stride = [_pick(rng, ((1, 6), (2, 3), (3, 1)))] * nd
    if rng.randrange(4) == 0:
        stride = [_pick(rng, ((1, 6), (2, 3), (3, 1))) for _ in range(nd)]
    eff = [(f - 1) * d + 1 for f, d in zip(filt, dil, strict=True)]
    mode = _pick(rng, (("same", 6), ("zero", 2), ("odd", 2)))
    if mode == "same":
        pad_l = [(e - 1) // 2 for e in eff]
        pad_r = [e - 1 - p for e, p in zip(eff, pad_l, strict=True)]
    elif mode == "zero":
        pad_l = [0] * nd
        pad_r = [0] * nd
    else:
        pad_l = [rng.randint(0, e - 1) for e in eff]
        pad_r = [rng.randint(0, e - 1) for e in eff]
    if nd == 3:
        size = [_size(rng, SIZES[3])] + [_size(rng, SIZES_3D_HW)] * 2
    elif nd == 2:
        size = [_size(rng, SIZES[2])] * 2
        if rng.randrange(4) == 0:
            size[1] = _size(rng, SIZES[2])
    else:
        size = [_size(rng, SIZES[1])]
    layer = Layer(
        fam, nd, G, rng.choice((1, 2, 4, 8, 16, 32)), C, K, size, filt, stride, dil, pad_l, pad_r
    )
    for i in range(nd):
        layer.input[i] = max(layer.input[i], layer.min_input(i))
    return layer


def shrink(layer: Layer) -> Layer | None:
    """The layer cut down to the bounds (batch, then the largest spatial dim, then the groups);
    None when it cannot be."""
    while not layer.fits():
        if layer.N > 1:
            layer.N //= 2
            continue
        room = [i for i in range(layer.ndim) if layer.input[i] > layer.min_input(i)]
        if room:
            i = max(room, key=lambda j: layer.input[j])
            layer.input[i] = max(layer.min_input(i), layer.input[i] * 3 // 4)
            continue
        if layer.G > 1:
            layer.G = max(1, layer.G // 2)
            continue
        return None
    return layer


def generate(seed: int, count: int) -> list[Layer]:
    rng = random.Random(seed)
    out: list[Layer] = []
    while len(out) < count:
        layer = shrink(draw(rng))
        if layer is not None and layer.flops() >= MIN_FLOP:
            out.append(layer)
    return out


def _x(v: list[int]) -> str:
    return "x".join(str(d) for d in v)


def name(seed: int, i: int, layer: Layer) -> str:
    tag = f"{_x(layer.filter)}s{_x(layer.stride)}d{_x(layer.dilation)}g{layer.G}"
    return f"rand{seed}_{i:03d}_{layer.family}_{layer.ndim}d_{tag}_{layer.C}_{layer.K}"


def csv_text(seed: int, count: int) -> str:
    lines = [
        f"# bench/random_layers.py --seed {seed} --count {count} (C and K per group)",
        HEADER,
    ]
    for i, layer in enumerate(generate(seed, count)):
        cells = [
            name(seed, i, layer),
            str(layer.ndim),
            str(layer.G),
            str(layer.N),
            str(layer.C),
            str(layer.K),
            _x(layer.input),
            _x(layer.filter),
            _x(layer.stride),
            _x(layer.dilation),
            _x(layer.pad_l),
            _x(layer.pad_r),
        ]
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


def map_text(seed: int, count: int) -> str:
    lines = ["shape,row,model,count"]
    for i, layer in enumerate(generate(seed, count)):
        n = name(seed, i, layer)
        lines.append(f"{n},{n},{layer.family}_{layer.ndim}d,1")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("-o", "--out", type=Path, help="CSV to write (default: stdout)")
    ap.add_argument("--map", type=Path, help="also write the layers as a corpus map")
    a = ap.parse_args(argv)
    if a.map:
        a.map.write_text(map_text(a.seed, a.count))
    text = csv_text(a.seed, a.count)
    if a.out:
        a.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
