# Sourced by the measurement scripts: `serve MODEL LOG [engine flags…]` starts `engine serve` on
# ENGINE_PORT (or a free port), sets PORT and waits for /health; `unserve` stops it (also on exit).
# Needs A (the agentmath command as an array).
ENGINE_PID=''
serve() {
  local model=$1 log=$2
  shift 2
  # A fixed ENGINE_PORT lets an interrupted evaluation resume: eval --resume refuses another URL.
  PORT=${ENGINE_PORT:-$(node -e "const s=require('net').createServer();s.listen(0,()=>{console.log(s.address().port);s.close()})")}
  "${A[@]}" engine serve --model "$model" --port "$PORT" --decode-threads 0 "$@" >"$log" 2>&1 &
  ENGINE_PID=$!
  for _ in $(seq 1 240); do
    curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && return 0
    kill -0 "$ENGINE_PID" 2>/dev/null || { echo "engine for $model stopped: see $log" >&2; exit 1; }
    sleep 1
  done
  echo "engine for $model did not answer in 240 s: see $log" >&2
  exit 1
}
unserve() { [[ -n $ENGINE_PID ]] && kill "$ENGINE_PID" 2>/dev/null && { wait "$ENGINE_PID" || :; }; ENGINE_PID=''; }
trap unserve EXIT
