/**
 * Writes a run's per-step scalars as a TensorBoard event file under `<folder>/tensorboard/`,
 * in TypeScript (TFRecord framing, hand-encoded `Event` protobufs): no Python package, no
 * network. `tensorboard --logdir runs` then shows each run as `<run>/tensorboard`. The file
 * starts with the version event, the run's configuration as text (step 0), and, for a resumed
 * run, a session start at the first redone step so that TensorBoard drops the points the
 * interrupted run wrote from there on. Values are float32, as TensorBoard stores them.
 */
import { type FileHandle, mkdir, open } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { fileVersionEvent, scalarsEvent, sessionStartEvent, textEvent } from './tensorboard-event.ts';
import { tfRecord } from './tfrecord.ts';
import type { MetricsLogger } from './types.ts';

export type TensorBoardLoggerOptions = {
  /** The run folder; events go to `<folder>/tensorboard/`. */
  folder: string;
  runName: string;
  /** The resolved configuration, shown by the text plugin (secrets already redacted). */
  config: unknown;
  /** The first step this process logs, when it resumes a run (a session start is written there). */
  resumeFromStep?: number;
  /** Milliseconds since the epoch (injected for tests). */
  now?: () => number;
  hostname?: string;
};

/** Opens a new event file (TensorBoard reads every file of the folder, in name order). */
export async function openTensorBoardLogger(options: TensorBoardLoggerOptions): Promise<MetricsLogger> {
  const { folder, runName, config, resumeFromStep, now = Date.now, hostname = osHostname() } = options;
  const directory = join(folder, 'tensorboard');
  await mkdir(directory, { recursive: true });
  const startMs = now();
  const seconds = String(Math.floor(startMs / 1000)).padStart(10, '0');
  const file = await openNewFile(
    join(directory, `events.out.tfevents.${seconds}.${hostname}.${process.pid}`),
  );
  const write = (events: Buffer[]) => file.write(Buffer.concat(events.map(tfRecord)));
  const configText = `run \`${runName}\`\n\n\`\`\`json\n${JSON.stringify(config, null, 2)}\n\`\`\`\n`;
  await write([
    fileVersionEvent(startMs / 1000),
    ...(resumeFromStep === undefined ? [] : [sessionStartEvent(startMs / 1000, resumeFromStep)]),
    textEvent(startMs / 1000, resumeFromStep ?? 0, 'config', configText),
  ]);
  let closed = false;
  return {
    location: directory,
    async log(step, scalars) {
      if (closed) throw new Error(`tensorboard logger of ${runName} is closed`);
      if (Object.keys(scalars).length === 0) return;
      await write([scalarsEvent(now() / 1000, step, scalars)]);
    },
    async close() {
      if (closed) return;
      closed = true;
      await file.close();
    },
  };
}

/** `<base>.0`, else `.1`, …: a second logger in the same second never appends to the first's file. */
async function openNewFile(base: string): Promise<FileHandle> {
  for (let suffix = 0; ; suffix += 1) {
    try {
      return await open(`${base}.${suffix}`, 'wx');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
  }
}
