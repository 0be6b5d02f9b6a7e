#!/usr/bin/env bash
# The comparisons of docs/real-model.md on SmolLM2-135M-Instruct, stage by stage:
#   data → tool SFT and text SFT (same steps, same batch) → evaluations (base with the tool
#   and the text prompt, each SFT model with its own prompt) → RL from each SFT model and from
#   the Instruct model itself (ZeroTIR) → evaluations of the RL models.
# Every stage is skipped when its result exists, and an interrupted one resumes, so the script
# can be run again after a stop (kill -9 included). Stages can be picked:
#   bash scripts/real-model-comparison.sh [OUT] [stage …]     stages: data sft eval-sft rl
#                                                             eval-rl eval-base math
# Environment: EVAL_COUNT (arith problems per evaluation, 200), BASE_COUNT (of them for the
# base model, whose answers run to the token budget: 100), SFT_STEPS (32), RL_MINUTES (10),
# RL_ZERO_MINUTES (the ZeroTIR run's, default RL_MINUTES), RL_LEVELS (3,4: the SFT data is
# levels 1-2, where the SFT model is right ~94% of the time and GRPO groups carry no signal),
# MATH_COUNT (first MATH-500 problems for the baseline, 50; docs/real-model.md ran 60).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/real-model}
shift || true
STAGES=${*:-data sft eval-sft rl eval-rl eval-base math}
EVAL_COUNT=${EVAL_COUNT:-200}
SFT_STEPS=${SFT_STEPS:-32}
RL_MINUTES=${RL_MINUTES:-10}
BASE_COUNT=${BASE_COUNT:-100}
RL_LEVELS=${RL_LEVELS:-3,4}
MATH_COUNT=${MATH_COUNT:-50}
A=(node bin/agentmath.js)
BASE=.agentmath/models/smollm2-135m-instruct
mkdir -p "$OUT"

want() { [[ " $STAGES " == *" $1 "* ]]; }
stamp() { echo "[$(date -u +%H:%M:%S)] $*  (load $(cut -d' ' -f1-3 /proc/loadavg))"; }

# One engine serving MODEL on a free port for the commands after it; stopped when they end.
source scripts/engine-serve.sh

# eval NAME PROMPT [extra flags…]: arith held-out, greedy, against the engine being served.
evaluate() {
  local name=$1 prompt=$2
  shift 2
  local resume=()
  [[ -f $OUT/$name/config.json ]] && resume=(--resume)
  [[ -f $OUT/$name/summary.json ]] && { stamp "eval $name: done"; return 0; }
  stamp "eval $name"
  "${A[@]}" eval --bench arith --limit "$EVAL_COUNT" --engine "http://127.0.0.1:$PORT" --tokenizer "$BASE" \
    --dialect markdown --prompt "$prompt" --temperature 0 --max-tokens 512 --max-tool-calls 4 \
    --concurrency 8 --out "$OUT/$name" "${resume[@]}" "$@" >"$OUT/$name.log" 2>&1
  stamp "eval $name: $(tail -n 3 "$OUT/$name.log" | tr '\n' ' ')"
}

if want data; then
  "${A[@]}" tasks write-arith --out "$OUT/arith-tool.jsonl" --count 400 --style tool --dialect markdown --levels 1,2
  "${A[@]}" tasks write-arith --out "$OUT/arith-text.jsonl" --count 400 --style text --levels 1,2
fi

sft() {
  local kind=$1 prompt=$2
  if [[ -f $OUT/sft-$kind/model/config.json ]]; then stamp "sft $kind: done"; return 0; fi
  local resume=()
  [[ -d $OUT/sft-$kind ]] && resume=(--resume)
  stamp "sft $kind"
  "${A[@]}" train sft --model "$BASE" --data "$OUT/arith-$kind.jsonl" --dialect markdown --prompt "$prompt" \
    --out "$OUT/sft-$kind" --batch-size 8 --steps "$SFT_STEPS" "${resume[@]}" >>"$OUT/sft-$kind.log" 2>&1
  stamp "sft $kind: $(tail -n 2 "$OUT/sft-$kind.log" | tr '\n' ' ')"
}
if want sft; then
  sft tool instructed
  sft text text-only
fi

if want eval-sft; then
  serve "$OUT/sft-tool/model" "$OUT/engine-sft-tool.log"
  evaluate eval-sft-tool instructed
  unserve
  serve "$OUT/sft-text/model" "$OUT/engine-sft-text.log"
  evaluate eval-sft-text text-only
  unserve
fi

rl() {
  local name=$1 model=$2
  shift 2
  if [[ -f $OUT/$name/model/config.json && -f $OUT/$name.done ]]; then stamp "$name: done"; return 0; fi
  local resume=()
  [[ -f $OUT/$name/config.json ]] && resume=(--resume)
  stamp "$name"
  "${A[@]}" train rl --model "$model" --dialect markdown --preset cpu --reward accuracy --levels "$RL_LEVELS" \
    --replicas 1 --trainer-procs 1 --eval-every 5 --minutes "$RL_MINUTES" --out "$OUT/$name" "${resume[@]}" "$@" \
    >>"$OUT/$name.log" 2>&1
  touch "$OUT/$name.done"
  stamp "$name: $(tail -n 2 "$OUT/$name.log" | tr '\n' ' ')"
}
if want rl; then
  rl rl-tool "$OUT/sft-tool/model"
  rl rl-text "$OUT/sft-text/model" --text-only --prompt text-only
  # The Instruct model never boxes an answer, so its groups are all wrong and dropped: a pool
  # of 16 problems ends each step after 16 groups (a step only ends when its pool does).
  RL_MINUTES=${RL_ZERO_MINUTES:-$RL_MINUTES} rl rl-zero "$BASE" --problems 16
fi

if want eval-rl; then
  for name in rl-tool rl-text rl-zero; do
    [[ -f $OUT/$name/model/config.json ]] || { stamp "eval $name: no model"; continue; }
    serve "$OUT/$name/model" "$OUT/engine-$name.log"
    prompt=instructed
    [[ $name == rl-text ]] && prompt=text-only
    evaluate "eval-$name" "$prompt"
    unserve
  done
fi
if want eval-base; then
  serve "$BASE" "$OUT/engine-base.log"
  evaluate eval-base-tool instructed --limit "$BASE_COUNT"
  evaluate eval-base-text text-only --limit "$BASE_COUNT"
  unserve
fi

if want math; then
  # MATH-500's first problems (the shared file carries no levels), base model, both prompts.
  serve "$BASE" "$OUT/engine-base.log"
  for prompt in instructed text-only; do
    name=math-base-$prompt
    if [[ -f $OUT/$name/summary.json ]]; then stamp "$name: done"; continue; fi
    resume=()
    [[ -f $OUT/$name/config.json ]] && resume=(--resume)
    stamp "$name"
    "${A[@]}" eval --bench math500 --limit "$MATH_COUNT" --engine "http://127.0.0.1:$PORT" --tokenizer "$BASE" \
      --dialect markdown --prompt "$prompt" --temperature 0 --max-tokens 1024 --max-tool-calls 4 \
      --concurrency 8 --out "$OUT/$name" "${resume[@]}" >"$OUT/$name.log" 2>&1
    stamp "$name: $(tail -n 3 "$OUT/$name.log" | tr '\n' ' ')"
  done
  unserve
fi

stamp "finished: $STAGES"
