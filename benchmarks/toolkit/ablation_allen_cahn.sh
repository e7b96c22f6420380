#!/usr/bin/env bash
# The Allen-Cahn ablation of docs/results.md ("The accuracy toolkit: Allen-Cahn ablation"): the spec
# examples/allen_cahn_toolkit with each tool turned off in turn, at one budget (Adam 2000 epochs, then
# L-BFGS 500 iterations in float64), seed 0, one process at a time, one torch thread.
#   bash benchmarks/toolkit/ablation_allen_cahn.sh [OUT]      (default OUT: runs/ablation-allen-cahn)
# Each variant's run folder is OUT/<name>; the table is printed at the end (pinnspec compare).
set -euo pipefail
OUT=${1:-runs/ablation-allen-cahn}
SPEC=examples/allen_cahn_toolkit/allen_cahn_toolkit.pinn
STAGES='adam(lr = 1e-3) epochs = 2000; lbfgs(history = 50) epochs = 500, dtype = float64'
MODEL='modified_mlp(width = 64, depth = 4, fourier = 2, features = 64, rwf = true)'
export OMP_NUM_THREADS=1
run() {  # NAME, then --set KEY=VALUE ... overrides of the full toolkit
    local name=$1; shift
    python -m pinnspec train "$SPEC" --out "$OUT/$name" --overwrite --quiet --set "stage=$STAGES" "$@"
}
run full
run no-lbfgs --set 'stage=adam(lr = 1e-3) epochs = 2500'
run no-causal --set causal=none
run no-gradnorm --set weights=none
run no-periodic-embedding --set enforce=none
run no-fourier --set "model=${MODEL/fourier = 2, features = 64/fourier = 0}"
run no-rwf --set "model=${MODEL/rwf = true/rwf = false}"
run no-modified-mlp --set 'model=fourier_mlp(width = 64, depth = 4, fourier = 2, features = 64, rwf = true)'
run no-gua --set align=none
run plain --set 'model=mlp(width = 64, depth = 4)' --set enforce=none --set causal=none --set weights=none \
    --set 'stage=adam(lr = 1e-3) epochs = 2500'
python -m pinnspec compare "$OUT"/*
