#!/usr/bin/env bash
# The quasi-Newton comparison of docs/results.md ("Burgers to 1e-6"): examples/burgers_ssbroyden with its
# second stage replaced by each method at one budget (Adam 2000 epochs, then 3000 iterations in float64 on
# RAD points new every 500), seed 0, one process at a time, one torch thread.
#   bash benchmarks/toolkit/quasi_newton_burgers.sh [OUT]      (default OUT: runs/quasi-newton-burgers)
set -euo pipefail
OUT=${1:-runs/quasi-newton-burgers}
SPEC=examples/burgers_ssbroyden/burgers_ssbroyden.pinn
export OMP_NUM_THREADS=1
for method in lbfgs bfgs ssbfgs ssbroyden; do
    python -m pinnspec train "$SPEC" --out "$OUT/$method" --overwrite --quiet \
        --set "stage=adam(lr = 5e-3) epochs = 2000; $method epochs = 3000, dtype = float64, resample = 500"
done
for method in lbfgs bfgs ssbfgs ssbroyden; do
    python - "$OUT/$method/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[1]}: test rel-L2 {r['rel_l2']:.3e} (best validation, epoch {r['best_epoch']}), "
      f"final {r['rel_l2_final']:.3e}, {r['train_time_s']:.0f} s")
PY
done
