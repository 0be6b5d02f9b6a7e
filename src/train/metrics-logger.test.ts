import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { trainerPython } from '../shared/python-environments.ts';
import { metricScalars, openMetricsLogger, redactSecrets } from './metrics-logger.ts';
import { crc32c, maskedCrc32c } from './tfrecord.ts';

const scratch = mkdtempSync(join(tmpdir(), 'agentmath-metrics-logger-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

// ---- an independent reader of what the TensorBoard logger writes ----

type Fields = Map<number, Array<bigint | Buffer>>;

/** Protobuf wire format: varints as bigint, fixed32/fixed64/bytes as raw bytes. */
function decodeMessage(bytes: Buffer): Fields {
  const fields: Fields = new Map();
  let offset = 0;
  const readVarint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[offset++];
      if (byte === undefined) throw new Error('truncated varint');
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  while (offset < bytes.length) {
    const key = Number(readVarint());
    const [field, wire] = [key >> 3, key & 7];
    const take = (length: number): Buffer => {
      offset += length;
      return bytes.subarray(offset - length, offset);
    };
    let value: bigint | Buffer;
    if (wire === 0) value = readVarint();
    else if (wire === 1) value = take(8);
    else if (wire === 5) value = take(4);
    else if (wire === 2) value = take(Number(readVarint()));
    else throw new Error(`wire type ${wire}`);
    fields.set(field, [...(fields.get(field) ?? []), value]);
  }
  return fields;
}

const one = (fields: Fields, field: number): bigint | Buffer | undefined => fields.get(field)?.[0];
const bytesOf = (fields: Fields, field: number): Buffer => one(fields, field) as Buffer;

/** TFRecord reader that checks both masked CRCs of every record (mask computed here, not imported). */
function readRecords(file: Buffer): Buffer[] {
  const mask = (crc: number) => ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
  const records: Buffer[] = [];
  let offset = 0;
  while (offset < file.length) {
    const length = Number(file.readBigUInt64LE(offset));
    expect(file.readUInt32LE(offset + 8)).toBe(mask(crc32c(file.subarray(offset, offset + 8))));
    const data = file.subarray(offset + 12, offset + 12 + length);
    expect(data.length).toBe(length);
    expect(file.readUInt32LE(offset + 12 + length)).toBe(mask(crc32c(data)));
    records.push(data);
    offset += 12 + length + 4;
  }
  expect(offset).toBe(file.length);
  return records;
}

type ReadEvent = {
  wallTime: number;
  step: number;
  fileVersion?: string;
  sessionStatus?: number;
  scalars: Record<string, number>;
  texts: Record<string, { text: string; plugin: string }>;
};

function readEvents(folder: string): ReadEvent[] {
  const names = readdirSync(join(folder, 'tensorboard'));
  expect(names).toHaveLength(1);
  expect(names[0]).toMatch(/^events\.out\.tfevents\.\d{10}\.[^.]+\.\d+\.0$/);
  return readRecords(readFileSync(join(folder, 'tensorboard', names[0] as string))).map((record) => {
    const event = decodeMessage(record);
    const read: ReadEvent = {
      wallTime: bytesOf(event, 1).readDoubleLE(0),
      step: Number(one(event, 2) ?? 0n),
      scalars: {},
      texts: {},
    };
    if (event.has(3)) read.fileVersion = bytesOf(event, 3).toString('utf8');
    if (event.has(7)) read.sessionStatus = Number(one(decodeMessage(bytesOf(event, 7)), 1));
    for (const valueBytes of event.has(5) ? (decodeMessage(bytesOf(event, 5)).get(1) as Buffer[]) : []) {
      const value = decodeMessage(valueBytes);
      const tag = bytesOf(value, 1).toString('utf8');
      if (value.has(2)) read.scalars[tag] = bytesOf(value, 2).readFloatLE(0);
      if (value.has(8)) {
        const tensor = decodeMessage(bytesOf(value, 8));
        expect(one(tensor, 1)).toBe(7n); // DT_STRING
        const plugin = decodeMessage(bytesOf(decodeMessage(bytesOf(value, 9)), 1));
        read.texts[tag] = {
          text: bytesOf(tensor, 8).toString('utf8'),
          plugin: bytesOf(plugin, 1).toString(),
        };
      }
    }
    return read;
  });
}

describe('tfrecord', () => {
  it('computes CRC32C (Castagnoli) and its TensorFlow mask', () => {
    // The standard check value of CRC-32C (RFC 3720, appendix B.4 lists the same polynomial).
    expect(crc32c(Buffer.from('123456789'))).toBe(0xe3069283);
    expect(crc32c(Buffer.alloc(32))).toBe(0x8a9136aa);
    const crc = 0xe3069283;
    expect(maskedCrc32c(Buffer.from('123456789'))).toBe((((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0);
  });
});

describe('openMetricsLogger tensorboard', () => {
  it('writes an event file whose records, CRCs, steps and values read back', async () => {
    const folder = join(scratch, 'tb-run');
    const logger = await openMetricsLogger({
      kind: 'tensorboard',
      folder,
      runName: 'tb-run',
      config: { model: 'models/q', sandbox: { urls: ['http://a'], token: 'hunter2' }, maxNewTokens: 512 },
    });
    expect(logger.location).toBe(join(folder, 'tensorboard'));
    await logger.log(0, metricScalars({ step: 0, reward: 0.25, time: { trainMs: 1200 }, skipped: false }));
    await logger.log(1, { reward: 0.5, 'time/trainMs': 1100, loss: Number.NaN });
    await logger.close();
    await logger.close();

    const events = readEvents(folder);
    expect(events[0]?.fileVersion).toBe('brain.Event:2');
    const config = events.find((event) => event.texts.config);
    expect(config?.texts.config?.plugin).toBe('text');
    expect(config?.texts.config?.text).toContain('"maxNewTokens": 512');
    expect(config?.texts.config?.text).toContain('[redacted]');
    expect(config?.texts.config?.text).not.toContain('hunter2');
    const steps = events.filter((event) => Object.keys(event.scalars).length > 0);
    expect(steps.map((event) => event.step)).toEqual([0, 1]);
    expect(steps[0]?.scalars).toEqual({ reward: 0.25, 'time/trainMs': 1200, skipped: 0 });
    expect(steps[1]?.scalars.reward).toBe(0.5);
    expect(steps[1]?.scalars['time/trainMs']).toBe(1100);
    expect(steps[1]?.scalars.loss).toBeNaN();
    expect(steps[0]?.wallTime).toBeGreaterThan(1.6e9);
    await expect(logger.log(2, { reward: 1 })).rejects.toThrow(/closed/);
  });

  it('stores values as float32 and marks a resumed run with a session start at its first step', async () => {
    const folder = join(scratch, 'tb-resume');
    const logger = await openMetricsLogger({
      kind: 'tensorboard',
      folder,
      runName: 'tb-resume',
      config: {},
      resumeFromStep: 300,
    });
    await logger.log(300, { rate: 0.1, tokens: 123_456_789 });
    await logger.close();
    const events = readEvents(folder);
    expect(events.filter((event) => event.sessionStatus === 1).map((event) => event.step)).toEqual([300]);
    const step = events.find((event) => event.step === 300 && 'rate' in event.scalars);
    expect(step?.scalars.rate).toBe(Math.fround(0.1));
    expect(step?.scalars.tokens).toBe(Math.fround(123_456_789));
  });

  const pythonWithTensorBoard = [trainerPython(), '/usr/bin/python3'].find(
    (python) => spawnSync(python, ['-c', 'import tensorboard'], { stdio: 'ignore' }).status === 0,
  );
  it.skipIf(pythonWithTensorBoard === undefined)(
    "is read by TensorBoard's own EventAccumulator (skipped when no Python here can import tensorboard)",
    async () => {
      const folder = join(scratch, 'tb-official');
      const first = await openMetricsLogger({ kind: 'tensorboard', folder, runName: 'x', config: { a: 1 } });
      for (const step of [0, 1, 2]) await first.log(step, { reward: step / 4 });
      await first.close();
      // Killed after step 2, resumed from the last committed step, 1: TensorBoard drops the first 2.
      const resumed = await openMetricsLogger({
        kind: 'tensorboard',
        folder,
        runName: 'x',
        config: { a: 1 },
        resumeFromStep: 2,
      });
      for (const step of [2, 3]) await resumed.log(step, { reward: 1 + step / 4 });
      await resumed.close();
      const script = [
        'import json, sys',
        'from tensorboard.backend.event_processing.event_accumulator import EventAccumulator',
        'accumulator = EventAccumulator(sys.argv[1]); accumulator.Reload()',
        'print(json.dumps([[e.step, e.value] for e in accumulator.Scalars("reward")]))',
      ].join('\n');
      const result = spawnSync(pythonWithTensorBoard as string, ['-c', script, join(folder, 'tensorboard')], {
        encoding: 'utf8',
      });
      expect(result.stderr).not.toMatch(/Traceback/);
      expect(JSON.parse(result.stdout.trim().split('\n').at(-1) as string)).toEqual([
        [0, 0],
        [1, 0.25],
        [2, 1.5],
        [3, 1.75],
      ]);
    },
  );
});

describe('openMetricsLogger wandb (the sidecar with a stand-in wandb module)', () => {
  /** A directory holding a `wandb` package, put on the sidecar's PYTHONPATH. */
  function fakeWandb(name: string, source: string): string {
    const directory = join(scratch, name, 'wandb');
    mkdirSync(directory, { recursive: true });
    writeFileSync(join(directory, '__init__.py'), source);
    return join(scratch, name);
  }

  it('fails at open with WANDB_UNAVAILABLE and the install command when wandb cannot be imported', async () => {
    const path = fakeWandb('missing', 'raise ModuleNotFoundError("No module named \'wandb\'")\n');
    const opening = openMetricsLogger({
      kind: 'wandb',
      folder: join(scratch, 'wandb-missing'),
      runName: 'r',
      config: {},
      environment: { ...process.env, PYTHONPATH: path },
    });
    await expect(opening).rejects.toMatchObject({
      code: 'WANDB_UNAVAILABLE',
      message: expect.stringMatching(/-m pip install wandb.*uv pip install --python .* wandb/),
    });
  });

  const recorder = [
    'import json, os',
    'def _record(**entry):',
    '    with open(os.environ["FAKE_WANDB_RECORD"], "a") as f: f.write(json.dumps(entry) + "\\n")',
    'class Settings:',
    '    def __init__(self, **kwargs): self.kwargs = kwargs',
    'class _Run:',
    '    def __init__(self, dir): self.dir = dir',
    '    def log(self, data, step=None): _record(call="log", step=step, data={k: repr(v) for k, v in data.items()})',
    '    def finish(self): _record(call="finish")',
    'def init(project=None, name=None, dir=None, config=None, settings=None):',
    '    print("wandb: a line of wandb noise on stdout")',
    '    _record(call="init", project=project, name=name, dir=dir, config=config, mode=os.environ.get("WANDB_MODE"), console=settings.kwargs.get("console"))',
    '    return _Run(dir + "/wandb/offline-run-1")',
    '',
  ].join('\n');

  async function runWithFake(name: string, extraEnvironment: NodeJS.ProcessEnv) {
    const record = join(scratch, `${name}.jsonl`);
    const lines: string[] = [];
    const logger = await openMetricsLogger({
      kind: 'wandb',
      folder: join(scratch, name),
      runName: name,
      config: { model: 'm', apiKey: 'sk-very-secret', trainer: { url: 'http://t', token: 'tok-secret' } },
      environment: {
        ...process.env,
        WANDB_MODE: '',
        ...extraEnvironment,
        PYTHONPATH: fakeWandb(`${name}-module`, recorder),
        FAKE_WANDB_RECORD: record,
        WANDB_API_KEY: 'sk-very-secret',
      },
      onLog: (line) => lines.push(line),
    });
    await logger.log(1, { reward: 0.5, 'time/trainMs': 3 });
    await logger.log(2, { reward: Number.NaN, loss: Number.POSITIVE_INFINITY });
    await logger.close();
    const calls = readFileSync(record, 'utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    return { logger, calls, lines, recordText: readFileSync(record, 'utf8') };
  }

  it('opens an offline run, logs each step, finishes at close, and never passes on a secret', async () => {
    const { logger, calls, lines, recordText } = await runWithFake('wandb-offline', {});
    expect(logger.location).toBe(join(scratch, 'wandb-offline', 'wandb', 'offline-run-1'));
    expect(calls.map((call) => call.call)).toEqual(['init', 'log', 'log', 'finish']);
    expect(calls[0]).toMatchObject({
      project: 'agentmath',
      name: 'wandb-offline',
      dir: join(scratch, 'wandb-offline'),
      mode: 'offline',
      console: 'off',
      config: { model: 'm', apiKey: '[redacted]', trainer: { url: 'http://t', token: '[redacted]' } },
    });
    expect(calls[1]).toEqual({ call: 'log', step: 1, data: { reward: '0.5', 'time/trainMs': '3.0' } });
    expect(calls[2]).toEqual({ call: 'log', step: 2, data: { reward: 'nan', loss: 'inf' } });
    expect(lines).toContain('wandb: a line of wandb noise on stdout');
    expect(recordText).not.toContain('secret');
    expect(lines.join('\n')).not.toContain('secret');
  });

  const pythonWithWandb =
    spawnSync(trainerPython(), ['-c', 'import wandb'], { stdio: 'ignore' }).status === 0;
  it.skipIf(!pythonWithWandb)(
    "writes an offline run with the real wandb (skipped when the trainer's Python cannot import wandb, as after setup)",
    async () => {
      const folder = join(scratch, 'wandb-real');
      const logger = await openMetricsLogger({
        kind: 'wandb',
        folder,
        runName: 'real',
        config: { apiKey: 'sk-real-secret' },
        environment: { ...process.env, WANDB_MODE: '', WANDB_API_KEY: 'sk-real-secret' },
      });
      expect(logger.location).toMatch(/wandb[/\\]offline-run-/);
      await logger.log(0, { reward: 0.5, 'time/trainMs': 7 });
      await logger.close();
      const runFile = readdirSync(logger.location).find((name) => name.endsWith('.wandb'));
      const bytes = readFileSync(join(logger.location, runFile as string)).toString('latin1');
      expect(bytes).toContain('time/trainMs');
      expect(bytes).not.toContain('sk-real-secret');
    },
  );

  it("keeps the user's WANDB_MODE", async () => {
    const { calls } = await runWithFake('wandb-online', { WANDB_MODE: 'online' });
    expect(calls[0]?.mode).toBe('online');
  });
});

describe('metricScalars and redactSecrets', () => {
  it('flattens a metrics row with "/" and keeps numbers and booleans only', () => {
    expect(
      metricScalars({
        step: 4,
        reward: 0.5,
        weightSyncMs: 12,
        staleness: { 0: 10, 1: 3 },
        time: { rolloutMs: 5, nested: { deep: 1 } },
        done: true,
        finishReason: 'steps',
        histogram: [1, 2],
        missing: null,
      }),
    ).toEqual({
      reward: 0.5,
      weightSyncMs: 12,
      'staleness/0': 10,
      'staleness/1': 3,
      'time/rolloutMs': 5,
      'time/nested/deep': 1,
      done: 1,
    });
  });

  it('replaces tokens, API keys, secrets and passwords at any depth, not counters named after tokens', () => {
    expect(
      redactSecrets({
        token: 't',
        maxNewTokens: 5,
        engines: [{ url: 'u', apiKey: 'k' }],
        sandbox: { authToken: 'a', api_key: 'b', clientSecret: 'c', password: 'd', noToken: null },
      }),
    ).toEqual({
      token: '[redacted]',
      maxNewTokens: 5,
      engines: [{ url: 'u', apiKey: '[redacted]' }],
      sandbox: {
        authToken: '[redacted]',
        api_key: '[redacted]',
        clientSecret: '[redacted]',
        password: '[redacted]',
        noToken: null,
      },
    });
  });
});
