/**
 * The embedded engine: supervision of the PyTorch worker process (the default policy's
 * engine and trainer) and its benchmark.
 */

export {
  type EmbeddedEngine,
  type EmbeddedEngineOptions,
  modelContextLength,
  startEmbeddedEngine,
} from './embedded-engine.ts';
export {
  type EmbeddedModelPaths,
  embeddedModelPaths,
  findEmbeddedModel,
  isModelFolder,
} from './embedded-model-paths.ts';
export {
  benchEngine,
  type EngineBenchOptions,
  type EngineBenchReport,
  type GenerationFigures,
} from './engine-bench.ts';
export {
  defaultPython,
  type EmbeddedWorker,
  type EmbeddedWorkerOptions,
  ENGINE_API_KEY_VARIABLE,
  startEmbeddedWorker,
  type WorkerEvent,
  WorkerStartError,
} from './worker-supervisor.ts';
