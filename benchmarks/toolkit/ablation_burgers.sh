#!/usr/bin/env bash
# The Burgers ablation of docs/results.md ("The accuracy toolkit: Burgers ablation"): the spec
# benchmarks/toolkit/burgers_toolkit.pinn with each tool turned off in turn, at its budget (Adam 1000 epochs,
# then L-BFGS 250 iterations in float64), seed 0, one process at a time, one torch thread.
#   bash benchmarks/toolkit/ablation_burgers.sh [OUT]      (default OUT: runs/ablation-burgers)
set -euo pipefail
OUT=${1:-runs/ablation-burgers}
SPEC=benchmarks/toolkit/burgers_toolkit.pinn
MODEL='modified_mlp(width = 64, depth = 4, fourier = 1, features = 64, rwf = true)'
export OMP_NUM_THREADS=1
run() {  # NAME, then --set KEY=VALUE ... overrides of the full toolkit
    local name=$1; shift
    python -m pinnspec train "$SPEC" --out "$OUT/$name" --overwrite --quiet "$@"
}
run full
run no-lbfgs --set 'stage=adam(lr = 1e-3) epochs = 1250'
run no-causal --set causal=none
run no-gradnorm --set weights=none
run no-enforce --set enforce=none
run no-rad --set sampler=lhs
run no-fourier --set "model=${MODEL/fourier = 1, features = 64/fourier = 0}"
run no-rwf --set "model=${MODEL/rwf = true/rwf = false}"
run no-modified-mlp --set 'model=fourier_mlp(width = 64, depth = 4, fourier = 1, features = 64, rwf = true)'
run no-gua --set align=none
run plain --set 'model=mlp(width = 64, depth = 4)' --set enforce=none --set causal=none --set weights=none \
    --set sampler=lhs --set 'stage=adam(lr = 1e-3) epochs = 1250'
