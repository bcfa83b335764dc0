#!/usr/bin/env bash
# The one prepared command for a lent GPU: every check that needs one, in one run (9 minutes on an H200 before the
# launch, AOTInductor and SDPA sections were added; they have only been dry-run on the CPU since).
#   device tool: run `bash benchmarks/gpu_session.sh` with timeout_s=590; the results come back from $OUT. Each part
#   has its own time limit, and gpu_check writes its JSON after every section, so a slow device still returns what
#   it checked (meta.complete says whether the run ended).
#   dry run here: bash benchmarks/gpu_session.sh --dry-run   (CPU, small sizes: checks the script, not the GPU)
# 1. benchmarks/gpu_check.py: builds the CUDA extension in place, then stream 1.0's known answers, CUDA == CPU for
#    every op, dtype and layout (randperm and multinomial too), the global view, batched keys, words == cuRAND,
#    torch.func._random where this torch has it on CUDA, compiled == eager and CUDA graphs, torch_rngx.mode's
#    routed calls, the Triton device functions compiled natively (fusion off, and on for the fusion-safe ones),
#    opcheck_all on the device, and speed at 2^28 against torch.
#    Then kernels per eager draw (profiler) and AOTInductor packages on device states.
# 2. benchmarks/gpu_memory.py: peak memory and step time of a 12-layer transformer training step (d=768, seq
#    1024, bf16), torch's dropout against torch_rngx.nn.convert, eager and compiled, with the attention's dropout
#    on materialised probabilities and through SDPA's dropout_p (torch's fused kernel against math attention under
#    torch_rngx.mode).
# Exit status: gpu_check's (1 iff a check fails); a missed speed target never fails the run.
set -uo pipefail
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/.."
out=${OUT:-benchmarks/out/gpu}
mkdir -p "$out"
if [ "${1:-}" = "--dry-run" ]; then
  check=(--device cpu --size-log2 14)
  memory=(--device cpu --layers 2 --d 64 --heads 4 --seq 32 --batch 2 --steps 2 --dtype float32)
  limits=(0 0)  # no time limit on the CPU
else
  check=(--opcheck)
  memory=()
  limits=(420 150)
fi
timeout "${limits[0]}" python3 benchmarks/gpu_check.py "${check[@]}" 2>&1 | tee "$out/gpu_check.log"
status=${PIPESTATUS[0]}
timeout "${limits[1]}" python3 benchmarks/gpu_memory.py "${memory[@]}" --json "$out/gpu_memory.json" 2>&1 | tee "$out/gpu_memory.md"
exit "$status"
