/**
 * Times weight syncs from disk against syncs over a process group, side by side on this machine,
 * through the real services: the trainer (one process, `agentmath_train serve`) and one embedded
 * engine, both on MODEL. Disk (the baseline): export to a folder + `/update_weights_from_disk`
 * (pause, flush, load, continue). Distributed: the group formed once (timed apart), then per
 * sync pause, flush, `/begin_weight_update`, bucket broadcasts + `/update_weights_from_distributed`,
 * `/end_weight_update`, continue. Also the trainer's resume checkpoint (`/save_checkpoint`).
 * Prints one JSON line per measurement, then one per kind with the median and p99 over rounds
 * and the ratio of the distributed median to the disk median.
 *
 *   node scripts/weight-sync-bench.ts MODEL_DIR [ROUNDS]
 */
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createEngine } from '../src/engine/create-engine.ts';
import { type EmbeddedWorker, startEmbeddedWorker } from '../src/engine/local/index.ts';
import { openWeightUpdateGroup, syncWeightsDistributed } from '../src/train/distributed-weight-sync.ts';
import { startTrainerService } from '../src/train/trainer-service.ts';
import { type PausableEngine, syncWeightsFromDisk } from '../src/train/weight-sync.ts';
import { ascending, percentile } from '../src/shared/percentile.ts';

const model = resolve(process.argv[2] ?? '');
const rounds = Number(process.argv[3] ?? 3);
const scratch = await mkdtemp(join(tmpdir(), 'agentmath-sync-bench-'));
const trainer = await startTrainerService({ model, reference: model, processes: 1, seed: 0 });
let worker: EmbeddedWorker | null = null;
try {
  worker = await startEmbeddedWorker({ model, port: 0, restart: false, startupTimeoutMs: 900_000 });
  const engine = createEngine({ url: worker.url, api: 'sglang' }) as unknown as PausableEngine;
  const state = await trainer.client.state();
  const print = (record: Record<string, unknown>) =>
    process.stdout.write(`${JSON.stringify({ parameters: state.parameters, ...record })}\n`);
  const times: Record<string, number[]> = { disk: [], distributed: [], checkpoint: [] };
  for (let round = 0; round < rounds; round++) {
    const path = join(scratch, `v${round}`);
    const disk = await syncWeightsFromDisk({ trainer: trainer.client, engines: [engine], path });
    print({ sync: 'disk', round, exportMs: disk.exportMs, loadMs: disk.pausedMs, totalMs: disk.totalMs });
    times.disk?.push(disk.totalMs);
    await rm(path, { recursive: true, force: true });
  }
  for (let round = 0; round < rounds; round++) {
    // The resume checkpoint train rl writes (DCP: fp32 weights and AdamW moments), for scale.
    const path = join(scratch, `checkpoint-${round}`);
    const saving = performance.now();
    await trainer.client.saveCheckpoint(path);
    const savedMs = performance.now() - saving;
    print({ sync: 'checkpoint', round, totalMs: savedMs, bytes: await folderBytes(path) });
    times.checkpoint?.push(savedMs);
    await rm(path, { recursive: true, force: true });
  }
  const formed = performance.now();
  const group = await openWeightUpdateGroup({
    trainer: trainer.client,
    engines: [{ name: 'engine', url: worker.url, engine }],
    masterAddress: '127.0.0.1',
    backend: 'gloo',
    groupName: `bench-${process.pid}`,
  });
  print({ sync: 'distributed-group', formMs: performance.now() - formed, buckets: group.buckets.length });
  for (let round = 0; round < rounds; round++) {
    const result = await syncWeightsDistributed({ trainer: trainer.client, group, policyVersion: state.policyVersion });
    print({ sync: 'distributed', round, totalMs: result.totalMs, bytes: result.bytes });
    times.distributed?.push(result.totalMs);
  }
  const medians: Record<string, number> = {};
  for (const [kind, values] of Object.entries(times)) {
    const sorted = ascending(values);
    medians[kind] = percentile(sorted, 0.5);
    print({ summary: kind, rounds: values.length, medianMs: medians[kind], p99Ms: percentile(sorted, 0.99) });
  }
  print({ summary: 'distributed / disk (median)', ratio: (medians.distributed ?? 0) / (medians.disk ?? 1) });
} finally {
  await worker?.stop();
  await trainer.stop();
  await rm(scratch, { recursive: true, force: true });
}

async function folderBytes(folder: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(folder, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(join(entry.parentPath, entry.name))).size;
  }
  return total;
}
