#!/usr/bin/env bash
# One calibration sweep on the GPUs of this node: collectives (group sizes 2..N) and GEMMs.
# Usage: tools/measure/calibration_sweep.sh OUTDIR [NPROC]   (multi-node: run collectives.py
# under your own torchrun/srun with --nnodes; the files are the same)
set -euo pipefail
out=${1:?usage: calibration_sweep.sh OUTDIR [NPROC]}
nproc=${2:-$(nvidia-smi -L | wc -l)}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/nvidia-smi.csv" 2>/dev/null || true
python3 -m torch.distributed.run --standalone --nproc-per-node "$nproc" "$here/collectives.py" --out "$out"
python3 "$here/gemm.py" --out "$out"
