#!/usr/bin/env bash
# GPU machine, one call (~2 min): A/B of a header patch of the direct kernels, the patched header
# (`new`; several patches: one build each) against the tree's (`base`), built side by side in one call, profiled (fp16 2D,
# GPU-verified) over bench/dev/shapes_dw.csv; then bench/dev/copy_floor.py (a graph-replayed copy
# of the same layers' bytes).   -> $OUT/dw_window.csv, dw_window.txt, regs_<tag>.txt, copy_floor.csv
# Default: the depthwise window path of forward / backward_data with its weights in shared memory,
# its columns converted where used and launch bounds for 12 warps an SM (bench/dev/dw_window.patch;
# not kept: bench/NOTES.md, "Depthwise window: weights in shared memory"), over the depthwise and
# 4-channel-group direct instances of the default sets and bench/dev/candidates/dwwin_<variant>.yaml.
# (The runs in bench/results/2026-11-26_H200_dw_window/ built the new header with a dev macro for
# the warps, 0 / 12 / 16: tags w0 / w12 / w16.) Another patch:
#   PATCH="bench/dev/mma_bands_1.patch bench/dev/mma_s5.patch" KERNELS='*_wt16x8x16_direct_*' REGS_MATCH=DirectPathE0 \
#     bash bench/dev/dw_window_call.sh
# (patches of the repository's templates/include/ckgen headers, any number of files each)
# VARIANTS (default "forward backward_data") and SHAPES (default bench/dev/shapes_dw.csv) choose
# what is built and profiled; a variant without bench/dev/candidates/<CANDIDATES>_<variant>.yaml
# takes its default set only. PROF_ARGS: extra profiler arguments (e.g. "--k-batch 0,1,2,4").
set -uo pipefail
. "$(dirname "$0")/small_project.sh"
W=${WORK:-/tmp/dww}
rm -rf "$W" && mkdir -p "$W"  # a warm machine keeps the last call's builds and profiles
read -r -a variants <<< "${VARIANTS:-forward backward_data}"
SHAPES=${SHAPES:-$ROOT/bench/dev/shapes_dw.csv}
args=()
for v in "${variants[@]}"; do
  args+=(--variant "$v" --config "$ROOT/configs/$v/default.yaml")
  cand=$ROOT/bench/dev/candidates/${CANDIDATES:-dwwin}_$v.yaml
  [ -f "$cand" ] && args+=(--config "$cand")
done
read -r -a kglobs <<< "${KERNELS:-*_t*x*x1_w*_wt1x1x1_direct_* *_t*x*x4_w*_wt1x1x1_direct_*}"
for k in "${kglobs[@]}"; do args+=(--kernels "$k"); done
small_generate "$W/gen" "${args[@]}" --datatype fp16 --ndim 2 || exit 1
# PATCH: one patch (build `new`) or several, space-separated (builds named after the files).
read -r -a patches <<< "${PATCH:-bench/dev/dw_window.patch}"
builds=(base:gen_base)
for p in "${patches[@]}"; do
  tag=new
  [ ${#patches[@]} -gt 1 ] && tag=$(basename "$p" .patch | tr '_' '-')
  cp -r "$W/gen" "$W/gen_$tag"
  (cd "$W/gen_$tag" && patch -s -p2 < "$ROOT/$p") || exit 1  # a/templates/include/... -> include/...
  builds+=("$tag:gen_$tag")
done
mv "$W/gen" "$W/gen_base"
t0=$SECONDS
# the builds side by side (one ninja each would leave cores idle on the last files)
for b in "${builds[@]}"; do
  IFS=: read -r tag dir <<< "$b"
  NINJA_JOBS=8 small_build "$W/$dir" "$W/build_$tag" "-DCKGEN_EXTRA_FLAGS=-Xptxas=-v" &
done
wait
echo "builds $((SECONDS - t0)) s"
for b in "${builds[@]}"; do
  IFS=: read -r tag _ <<< "$b"
  [ -x "$W/build_$tag/bin/ckgen_profiler_${variants[0]}" ] || echo "build $tag failed (see $W/build_$tag.log)"
  grep -B1 -A2 "${REGS_MATCH:-DirectPathE1E}" "$W/build_$tag.log" | grep -E "Compiling entry|registers|spill" |
    sed -E 's/.*(grouped_conv_[a-z_]+fp16_2d_t[0-9x]+_w[0-9x]+_wt1x1x1_direct_v[0-9x]+).*/\1/' > "$OUT/regs_$tag.txt"
done
# PASSES (default 1) rounds over the builds, each build profiled once a round
for pass in $(seq 1 "${PASSES:-1}"); do
  for b in "${builds[@]}"; do
    IFS=: read -r tag _ <<< "$b"
    # PROFILE_ENVS: NAME=VALUE settings, each a profile of every build (tag-VALUE)
    for env in ${PROFILE_ENVS:-none=}; do
      et=$tag${env#*=}
      [ -n "${env#*=}" ] && et=$tag-${env#*=}
      for v in "${variants[@]}"; do
        f=prof_${et}_${v}_p$pass
        env "$env" timeout 120 "$W/build_$tag/bin/ckgen_profiler_$v" --shapes "$SHAPES" --shape '*' \
          --datatype fp16 --verify gpu --warmup 5 --repeat 9 ${PROF_ARGS:-} --csv "$W/$f.csv" > "$W/$f.log" 2>&1
        echo "profile $et $v pass $pass rc=$? FAIL lines: $(grep -c FAIL "$W/$f.log")"
      done
    done
  done
done
python3 - "$W" "$OUT" "${variants[@]}" <<'PY'
import csv, glob, os, sys
w, out, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
rows, tags = [], ["base"]
for f in sorted(glob.glob(w + "/prof_*.csv")):
    tag = os.path.basename(f).split("_")[1]
    tags += [tag] if tag not in tags else []
    for r in csv.DictReader(open(f)):
        r["build"] = tag
        rows.append(r)
keys = ["build", "variant", "shape", "instance", "ms", "verified"]
with open(out + "/dw_window.csv", "w", newline="") as fh:
    wr = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
    wr.writeheader()
    wr.writerows(rows)
with open(out + "/dw_window.txt", "w") as fh:
    for v in variants:
        for shape in sorted({r["shape"] for r in rows}):
            for tag in tags:
                runs = {}  # instance -> its times over the passes
                for r in rows:
                    if r["build"] == tag and r["variant"] == v and r["shape"] == shape and r["verified"] == "pass":
                        runs.setdefault(r["instance"] + ("_kb" + r["k_batch"] if r.get("k_batch") else ""), []).append(float(r["ms"]) * 1e3)
                for inst, ts in sorted(runs.items(), key=lambda kv: min(kv[1]))[:4]:
                    times = " ".join(f"{t:7.2f}" for t in ts)
                    print(f"{v:14s} {shape:18s} {tag:12s} {times} us {inst[-44:]}", file=fh)
    print("not passing:", sum(1 for r in rows if r["verified"] != "pass"), file=fh)
PY
cat "$OUT/dw_window.txt"
python3 "$ROOT/bench/dev/copy_floor.py" --csv "$OUT/copy_floor.csv"
