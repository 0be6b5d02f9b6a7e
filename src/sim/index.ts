/** The simulator: virtual time, simulated engine replicas and sandbox, workloads, the bound. */
export { type CalibrationOptions, type CalibrationReport, runCalibration } from './calibration-run.ts';
export { type CostModelFit, fitCostModel } from './cost-model-fit.ts';
export { type Distribution, distributionSchema, mean, quantile, sample } from './distribution.ts';
export { type CostModel, costModelSchema, decodeMs } from './engine-cost-model.ts';
export { SIM_CONFIGURATIONS, type SimConfiguration } from './sim-configurations.ts';
export { SimulationNoProgressError, SimulationStalledError, WorkloadInvalidError } from './sim-errors.ts';
export {
  boundOf,
  type ConfigurationResult,
  type SimStep,
  type SimulationReport,
  simulate,
} from './simulate.ts';
export { KvCapacityExceededError, SimulatedEngine, type SimulatedEngineMetrics } from './simulated-engine.ts';
export { SimulatedPolicy } from './simulated-policy.ts';
export { SimulatedSandbox } from './simulated-sandbox.ts';
export { calibrationTable, simulationJson, simulationTable } from './simulation-table.ts';
export { type StepBound, stepBound } from './step-bound.ts';
export type { TrajectoryPlan } from './trajectory-plan.ts';
export { VirtualClock } from './virtual-clock.ts';
export { BUILTIN_WORKLOADS, loadWorkload, parseWorkload, type Workload, workloadSchema } from './workload.ts';
export { workloadPlans } from './workload-plans.ts';
