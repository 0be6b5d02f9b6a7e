/**
 * The embedded engine: supervision of the PyTorch worker process (the default policy's
 * engine and trainer). Its benchmark is in `src/bench/engine-bench.ts`.
 */

export {
  type EmbeddedEngine,
  type EmbeddedEngineOptions,
  modelContextLength,
  startEmbeddedEngine,
} from './embedded-engine.ts';
export { generateExactly } from './generate-exactly.ts';
export {
  defaultPython,
  type EmbeddedWorker,
  type EmbeddedWorkerOptions,
  ENGINE_API_KEY_VARIABLE,
  startEmbeddedWorker,
  type WorkerEvent,
  WorkerStartError,
} from './worker-supervisor.ts';
