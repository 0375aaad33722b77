#!/usr/bin/env bash
# What a lent NVIDIA GPU should be asked first (at most about 8 minutes on an H200):
#   1. the tests that need CUDA (pytest -m gpu), none skipped;
#   2. the training benchmark on CUDA (benchmarks/bench_train.py);
#   3. one experiment of the full profile (single_layer: 20 models) trained on the GPU with the
#      store off, compared with the stored models (trained on a CPU): steps to the stopping
#      rule within attnsink.stored.STEPS_RTOL, the same sink on every softmax model, none on ReLU.
# It prints the time of each step, and with $OUT set (the device tool) leaves the benchmark's
# JSON, the experiment's JSON and a log there.
#
#   scripts/device_check.sh          on the GPU
#   scripts/device_check.sh --dry    on a CPU, small: the same steps end to end (CI runs this)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out=${OUT:-$(mktemp -d)}
dry=0
[ "${1:-}" = "--dry" ] && dry=1
if [ $dry = 1 ]; then
  device=cpu
  tests=(-m gpu --collect-only -q)
  bench=(--seeds 2 --steps 6 --seed-steps 3 --baseline-steps 3 --repeats 1 --criterion-steps 4)
  experiment=(--profile quick --seeds 1)   # seed 0 of the quick run is seed 0 of the full one (both stop early)
else
  device=cuda
  $PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA here (use --dry on a CPU)'"
  nvidia-smi -L
  tests=(-m gpu -rs)
  bench=(--repeats 3)
  experiment=(--profile full)
fi
t() { local s=$(date +%s); "$@"; echo "   ($(( $(date +%s) - s )) s)"; }

echo "== 1. tests that need CUDA"
log=$($PY -m pytest -p no:cacheprovider tests "${tests[@]}" 2>&1) || { echo "$log"; exit 1; }
echo "$log" | tail -3
if [ $dry = 0 ] && echo "$log" | grep -q "skipped"; then echo "error: a GPU test was skipped" >&2; exit 1; fi
[ $dry = 1 ] && { echo "$log" | grep -q "test_tiny_run_on_the_gpu" || { echo "error: no GPU test collected" >&2; exit 1; }; }

echo "== 2. the training benchmark on $device"
t $PY benchmarks/bench_train.py --device "$device" "${bench[@]}" --out "$out/bench_$device.json"

echo "== 3. single_layer trained on $device, the store off, against the stored models"
t env ATTNSINK_STORE= $PY -m attnsink reproduce single_layer "${experiment[@]}" --device "$device" --no-cache \
  --out "$out/single_layer_$device.json" >"$out/single_layer_$device.log" 2>&1
$PY - "$out/single_layer_$device.json" <<'PYEOF'
import json, sys
from attnsink.stored import compare_with_store
runs = json.load(open(sys.argv[1]))["runs"]
table = compare_with_store(runs, "single_layer")
print(table.to_string(index=False))
soft = [r["bos_mass_nontrigger"] for r in runs if r["attention"] == "softmax"]
relu = [r["bos_mass_nontrigger"] for r in runs if r["attention"] == "relu"]
assert len(table) == len(runs), "a run has no stored counterpart"
assert table.ok.all(), "steps to the stopping rule differ from the stored models beyond the tolerance"
assert min(soft) > 0.9 and max(relu) < 0.05, (soft, relu)
print(f"same conclusions: softmax BOS mass {min(soft):.4f} or more, ReLU {max(relu):.4f} or less;"
      f" steps within {table.ratio.sub(1).abs().max():.1%} of the stored models")
PYEOF
echo "device check passed"
