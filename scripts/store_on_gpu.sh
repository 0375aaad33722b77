#!/usr/bin/env bash
# Train experiments' full profile on one NVIDIA GPU, side by side, and put what finished in
# the store (store/), for a lent GPU of limited time.
#
#   scripts/store_on_gpu.sh SECONDS NAME[:WORKERS]...
#
# Each NAME runs `python -m attnsink reproduce NAME --profile full --device "$DEVICE" --workers W`
# (W processes share the GPU, default 4) into the results cache. At SECONDS the runs still
# training are stopped: every group that finished is already cached, so nothing finished is
# lost. Then `python -m attnsink store` copies into store/ whatever the cache holds of those
# experiments, and `status` prints what is stored and missing. With $OUT set (the device
# tool), the store, the logs and the status come back in $OUT as store.tar (in 15 MB parts).
# Needs Python with torch (CUDA), numpy, pandas, matplotlib, seaborn, tqdm and pyyaml; the
# library runs from src/ without an install.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: $0 SECONDS NAME[:WORKERS]..." >&2
  exit 2
fi
limit=$1
shift
PY=${PYTHON:-python3}
DEVICE=${DEVICE:-cuda}  # DEVICE=cpu tries the script on a machine without a GPU
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export ATTNSINK_CACHE_DIR="${ATTNSINK_CACHE_DIR:-$PWD/.attnsink-cache}"
logs=results/gpu
mkdir -p "$logs"
if [ "$DEVICE" = cuda ]; then
  $PY -c "import torch; assert torch.cuda.is_available(), 'no CUDA here'; print('torch', torch.__version__, torch.cuda.get_device_name(0))" || exit 1
fi

start=$(date +%s)
names=()
groups=()
for spec in "$@"; do
  name=${spec%%:*}
  workers=${spec#*:}
  [ "$workers" = "$spec" ] && workers=4
  names+=("$name")
  # its own process group, so that stopping it stops its worker processes too, and nothing else
  setsid $PY -m attnsink reproduce "$name" --profile full --device "$DEVICE" --workers "$workers" \
    --out "$logs/$name.json" >"$logs/$name.log" 2>&1 &
  groups+=($!)
  echo "started $name with $workers workers (process group $!)"
done
while [ -n "$(jobs -r)" ] && [ $(( $(date +%s) - start )) -lt "$limit" ]; do
  sleep "${POLL_S:-30}"
  echo "$(( $(date +%s) - start )) s: $(ls "$ATTNSINK_CACHE_DIR" 2>/dev/null | wc -l) models cached;" \
    "$(nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader 2>/dev/null || true)"
done
for g in "${groups[@]}"; do
  kill -TERM -- "-$g" 2>/dev/null
done
sleep 2
for g in "${groups[@]}"; do
  kill -KILL -- "-$g" 2>/dev/null
done
wait
wall=$(( $(date +%s) - start ))
echo "training stopped after $wall s"
for name in "${names[@]}"; do
  if [ -s "$logs/$name.json" ]; then echo "$name: finished"; else echo "$name: stopped before the end"; fi
done
$PY -m attnsink store "${names[@]}" --wall-s "$wall" --device "$DEVICE"
$PY -m attnsink status | tee "$logs/status.txt"
if [ -n "${OUT:-}" ]; then
  tar -cf "$OUT/store.tar" store "$logs"
  if [ "$(stat -c %s "$OUT/store.tar")" -gt 15000000 ]; then
    split -b 15000000 -d "$OUT/store.tar" "$OUT/store.tar.part"
    rm "$OUT/store.tar"
  fi
  ls -la "$OUT"
fi
