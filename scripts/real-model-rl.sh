#!/usr/bin/env bash
# RL where SFT left room, on SmolLM2-135M-Instruct (docs/real-model.md, "RL where SFT left room"):
#   sft     tool SFT and text SFT from the Instruct model, the same problem mix as the embedded
#           quickstart's (levels 1-4, level 5 thinly: 16 of the 400 problems), same steps and batch
#   probe   each SFT model's pass rate on the RL problems (train split, temperature 1, k samples):
#           what a GRPO group of that model sees
#   rl      RL from each SFT model on level 5, SEEDS seeds each, the same budget for both arms
#   eval    every model on the level-5 held-out split (EVAL_COUNT problems, never trained on),
#           greedy; an RL run that made no update is not evaluated again (its model is its start)
# ARMS limits the RL runs and their evaluations; sft, probe and the SFT evaluations run both arms.
# The SFT data's programs import math and fractions only, so the sandbox workers preload nothing
# (SymPy, NumPy and SciPy cost each trajectory half a second of a core; docs/sandbox.md).
# Every stage is skipped when its result exists and resumes when it was stopped (kill -9
# included), so the script can be run again after a stop. Stages can be picked:
#   bash scripts/real-model-rl.sh [OUT] [stage …]      stages: sft probe rl eval
# Environment: SFT_STEPS (32), RL_MINUTES (15 per run), RL_LR (1e-5), SEEDS ("0 1"), ARMS ("tool text"),
# RL_POOL (training problems in RL's pool, cycled: a step draws at most that many groups; default
# train rl's 4,000 — a model whose every group is all wrong, the text arm's here, then never ends
# its first step), EVAL_COUNT (200), PROBE_COUNT (32 problems × PROBE_K 4 samples), ENGINE_PORT (fixed port, so
# an interrupted evaluation resumes against the same URL).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/real-model-rl}
shift || true
STAGES=${*:-sft probe rl eval}
SFT_STEPS=${SFT_STEPS:-32}
RL_MINUTES=${RL_MINUTES:-15}
RL_LR=${RL_LR:-1e-5}
SEEDS=${SEEDS:-0 1}
ARMS=${ARMS:-tool text}
RL_POOL=${RL_POOL:-}
EVAL_COUNT=${EVAL_COUNT:-200}
PROBE_COUNT=${PROBE_COUNT:-32}
PROBE_K=${PROBE_K:-4}
RL_LEVELS=5
A=(node bin/agentmath.js)
BASE=.agentmath/models/smollm2-135m-instruct
mkdir -p "$OUT"

want() { [[ " $STAGES " == *" $1 "* ]]; }
stamp() { echo "[$(date -u +%H:%M:%S)] $*  (load $(cut -d' ' -f1-3 /proc/loadavg))"; }
[[ -f $BASE/config.json ]] || "${A[@]}" model pull smollm2-135m-instruct

source scripts/engine-serve.sh

prompt_of() { [[ $1 == text ]] && echo text-only || echo instructed; }

sft() {
  local arm=$1 extra=()
  [[ $arm == text ]] && extra=(--text-only)
  if [[ -f $OUT/sft-$arm/model/config.json ]]; then stamp "sft $arm: done"; return 0; fi
  [[ -d $OUT/sft-$arm ]] && extra+=(--resume)
  stamp "sft $arm"
  "${A[@]}" train sft --model "$BASE" --dialect markdown --prompt "$(prompt_of "$arm")" \
    --problems 400 --levels 1,2,3,4,5 --level-weights 4,4,4,4,1 --batch-size 8 --steps "$SFT_STEPS" \
    --eval-problems 0 --out "$OUT/sft-$arm" "${extra[@]}" >>"$OUT/sft-$arm.log" 2>&1
  stamp "sft $arm: $(tail -n 2 "$OUT/sft-$arm.log" | tr '\n' ' ')"
}
if want sft; then
  sft tool
  sft text
fi

# evaluate NAME ARM FILE K TEMPERATURE: the problems of FILE against the engine being served.
evaluate() {
  local name=$1 arm=$2 file=$3 k=$4 temperature=$5 resume=()
  [[ -f $OUT/$name/summary.json ]] && { stamp "$name: done"; return 0; }
  [[ -f $OUT/$name/config.json ]] && resume=(--resume)
  stamp "$name"
  "${A[@]}" eval --bench "$file" --engine "http://127.0.0.1:$PORT" --tokenizer "$BASE" -k "$k" \
    --dialect markdown --prompt "$(prompt_of "$arm")" --temperature "$temperature" --top-p 1 \
    --max-tokens 512 --max-tool-calls 4 --concurrency 32 --sandbox-preload none --out "$OUT/$name" "${resume[@]}" \
    >"$OUT/$name.log" 2>&1
  stamp "$name: $(tail -n 3 "$OUT/$name.log" | tr '\n' ' ')"
}

if want probe; then
  # Train-split problems of the RL levels (what RL samples from), not the held-out split.
  [[ -f $OUT/probe.jsonl ]] ||
    "${A[@]}" tasks arith --split train --seed 7 --count "$PROBE_COUNT" --levels "$RL_LEVELS" --json >"$OUT/probe.jsonl"
  for arm in tool text; do
    serve "$OUT/sft-$arm/model" "$OUT/engine-sft-$arm.log" --max-running-requests 32
    evaluate "probe-sft-$arm" "$arm" "$OUT/probe.jsonl" "$PROBE_K" 1
    unserve
  done
fi

rl() {
  local arm=$1 seed=$2 name="rl-$1-s$2" extra=()
  [[ $arm == text ]] && extra=(--text-only --prompt text-only)
  [[ -n $RL_POOL ]] && extra+=(--problems "$RL_POOL")
  if [[ -f $OUT/$name.done ]]; then stamp "$name: done"; return 0; fi
  [[ -f $OUT/$name/config.json ]] && extra+=(--resume)
  stamp "$name"
  "${A[@]}" train rl --model "$OUT/sft-$arm/model" --dialect markdown --preset cpu --reward accuracy \
    --levels "$RL_LEVELS" --replicas 1 --trainer-procs 1 --eval-every 0 \
    --learning-rate "$RL_LR" --seed "$seed" --sandbox-preload none --minutes "$RL_MINUTES" --out "$OUT/$name" "${extra[@]}" \
    >>"$OUT/$name.log" 2>&1
  touch "$OUT/$name.done"
  stamp "$name: $(tail -n 2 "$OUT/$name.log" | tr '\n' ' ')"
}
if want rl; then
  for seed in $SEEDS; do
    for arm in $ARMS; do rl "$arm" "$seed"; done
  done
fi

if want eval; then
  [[ -f $OUT/heldout.jsonl ]] ||
    "${A[@]}" tasks arith --split eval --count "$EVAL_COUNT" --levels "$RL_LEVELS" --json >"$OUT/heldout.jsonl"
  for arm in tool text; do
    serve "$OUT/sft-$arm/model" "$OUT/engine-sft-$arm.log" --max-running-requests 32
    evaluate "eval-sft-$arm" "$arm" "$OUT/heldout.jsonl" 1 0
    unserve
    for seed in $SEEDS; do
      [[ " $ARMS " == *" $arm "* ]] || continue
      name=rl-$arm-s$seed
      [[ -f $OUT/$name/model/config.json ]] || { stamp "eval $name: no model"; continue; }
      # A run whose every group was all wrong (or all right) never updated: its model is its start.
      updates=$(node -e "const l=require('fs').readFileSync(process.argv[1],'utf8').trim().split('\\n');console.log(l.reduce((n,x)=>n+(JSON.parse(x).updates||0),0))" "$OUT/$name/metrics.jsonl")
      [[ $updates -gt 0 ]] || { stamp "eval $name: no update in the run, its model is sft-$arm's"; continue; }
      serve "$OUT/$name/model" "$OUT/engine-$name.log" --max-running-requests 32
      evaluate "eval-$name" "$arm" "$OUT/heldout.jsonl" 1 0
      unserve
    done
  done
fi

stamp "finished: $STAGES"
