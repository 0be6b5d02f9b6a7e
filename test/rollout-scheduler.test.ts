/**
 * The rollout scheduler against real HTTP servers speaking SGLang's `/generate` (scripted
 * models, latency controlled by gates), through the router and the real SGLang client.
 * Assertions are on the order of events, never on wall time.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { SessionPark } from '../src/agent/index.ts';
import { createByteLevelTokenizer, createEngine, createRouterPolicy, Router } from '../src/engine/index.ts';
import { tagsDialect } from '../src/protocol/index.ts';
import {
  groupRecord,
  initialRolloutState,
  type RolloutEvent,
  type RolloutProblem,
  type RolloutStepInput,
  rolloutConfigSchema,
  runRolloutStep,
} from '../src/rollout/index.ts';
import { ROLLOUT_BENCH_CONFIGURATIONS, runRolloutBench } from '../src/rollout/rollout-bench.ts';
import type { RolloutParts } from '../src/rollout/types.ts';
import { systemClock } from '../src/shared/clock.ts';
import type { Trajectory } from '../src/trajectory/trajectory.ts';
import {
  functionSandbox,
  type ScriptPart,
  seededRandom,
  startScriptedSglangServer,
} from './agent-fixtures.ts';

const tokenizer = createByteLevelTokenizer();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Three tool calls, the second reading a variable the first set (session state), then an answer. */
const PARTS: ScriptPart[] = [
  '<code>\nx = 40\nprint(x)\n</code>',
  '<code>\nprint(x + 1)\n</code>',
  '<code>\nprint(x + 2)\n</code>',
  (output) => `\\boxed{${output.trim()}}`,
];

/** Runs the little Python the script writes, with per-session state: a stand-in for the jail. */
const sandbox = () =>
  functionSandbox((code, state) => {
    const assign = /^\s*x = (\d+)/.exec(code);
    if (assign) state.set('x', Number(assign[1]));
    const read = /print\(x(?: \+ (\d+))?\)/.exec(code);
    if (!state.has('x'))
      return {
        status: 'error',
        stdout: '',
        stderr: '',
        exception: "NameError: name 'x' is not defined",
        ms: 1,
      };
    const value = (state.get('x') as number) + Number(read?.[1] ?? 0);
    return { status: 'ok', stdout: `${value}\n`, stderr: '', ms: 1 };
  });

type Log = Array<{ kind: 'arrive' | 'answer'; long: boolean; turn: number; call: number }>;

async function replicas(
  count: number,
  options: { gate?: (context: string) => Promise<void>; version?: () => string } = {},
) {
  const log: Log = [];
  const engines = [];
  const servers: { close: () => Promise<void> }[] = [];
  for (let index = 0; index < count; index++) {
    const server = await startScriptedSglangServer({
      model: { parts: PARTS },
      tokenizer,
      gate: async (call, context) => {
        const entry = {
          long: context.includes('LONG'),
          turn: context.split('</interpreter>').length - 1,
          call,
        };
        log.push({ kind: 'arrive', ...entry });
        await options.gate?.(context);
        log.push({ kind: 'answer', ...entry });
      },
      ...(options.version === undefined ? {} : { weightVersion: options.version }),
    });
    const engine = createEngine({ api: 'sglang', url: server.url, timeoutMs: 30_000 });
    cleanups.push(
      () => server.close(),
      () => engine.close(),
    );
    engines.push({ name: server.url, engine });
    servers.push(server);
  }
  const router = new Router({
    replicas: engines,
    policy: createRouterPolicy('prefix-aware'),
    clock: systemClock,
  });
  return { router, log, servers, engines };
}

function source(problems: RolloutProblem[]) {
  let index = 0;
  return { next: () => problems[index++] ?? null, taken: () => index };
}

function parts(router: Router, extra: Partial<RolloutParts> = {}): RolloutParts & { events: RolloutEvent[] } {
  const events: RolloutEvent[] = [];
  return {
    engine: router,
    routerName: router.policy.name,
    tokenizer,
    dialect: tagsDialect,
    sandbox: sandbox(),
    park: new SessionPark(),
    // Even samples are right, odd wrong: every group carries a signal unless a test says otherwise.
    grade: async (trajectory: Trajectory) => ({
      correct: trajectory.answer !== null && trajectory.sample % 2 === 0,
    }),
    clock: systemClock,
    random: seededRandom(7),
    events,
    onEvent: (event) => events.push(event),
    ...extra,
  };
}

function input(
  overrides: Partial<RolloutStepInput> & { config: RolloutStepInput['config'] },
): RolloutStepInput {
  return {
    step: 0,
    policyVersion: 0,
    state: initialRolloutState(),
    problems: source([]),
    agent: { sampling: { temperature: 1, topP: 1 } },
    ...overrides,
  };
}

function deferred() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const until = async (condition: () => boolean) => {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 1));
};

const LONG_TAIL = [
  { id: 'long', text: 'LONG problem', answer: '42' },
  { id: 'short', text: 'short problem', answer: '42' },
];

/** Two replicas whose answers to the long problem wait until `gate.open()`, and the step's parts. */
async function gatedLongTail() {
  const gate = deferred();
  const { router } = await replicas(2, {
    gate: (context) => (context.includes('LONG') ? gate.promise : Promise.resolve()),
  });
  return { gate, run: parts(router) };
}

/** One step over the long-tail problems; the long problem's requests wait until `open()`. */
async function longTailStep(mode: 'async' | 'sync') {
  const gate = deferred();
  const { router, log } = await replicas(2, {
    gate: (context) => (context.includes('LONG') ? gate.promise : Promise.resolve()),
  });
  const run = parts(router);
  const config = rolloutConfigSchema.parse({
    groupSize: 2,
    batchSize: 2,
    overProvision: 0,
    partialRollout: false,
    mode,
  });
  const step = runRolloutStep(input({ config, problems: source(LONG_TAIL) }), run);
  return { open: gate.open, log, run, step };
}

describe('rollout scheduler over SGLang /generate', () => {
  it('async: a long-tailed trajectory does not delay the others', async () => {
    const { open, log, run, step } = await longTailStep('async');
    // The long group's first answer is held back; the short group must finish and be decided meanwhile.
    await until(() =>
      run.events.some((event) => event.type === 'group-decide' && event.group.problem.id === 'short'),
    );
    expect(log.some((entry) => entry.long && entry.kind === 'answer')).toBe(false);
    open();
    const result = await step;
    const firstLongAnswer = log.findIndex((entry) => entry.long && entry.kind === 'answer');
    const lastShort = log.findLastIndex((entry) => !entry.long);
    expect(lastShort).toBeLessThan(firstLongAnswer);
    expect(result.stats).toMatchObject({
      mode: 'async',
      trajectoriesFinished: 4,
      groupsKept: 2,
      toolCalls: 12,
    });
    expect(result.kept.map((group) => group.advantages.map((value) => Math.sign(value ?? 0)))).toEqual([
      [1, -1],
      [1, -1],
    ]);
  });

  it('sync: every turn waits for the slowest trajectory of the batch', async () => {
    const { open, log, run, step } = await longTailStep('sync');
    // The short trajectories run their first tool call, then wait at the turn barrier.
    await until(() => (run.sandbox as ReturnType<typeof sandbox>).executed.length === 2);
    open();
    const result = await step;
    const longFirstAnswer = log.findIndex(
      (entry) => entry.long && entry.kind === 'answer' && entry.turn === 0,
    );
    const shortSecondTurn = log.findIndex(
      (entry) => !entry.long && entry.kind === 'arrive' && entry.turn === 1,
    );
    expect(longFirstAnswer).toBeLessThan(shortSecondTurn);
    // Turn by turn: no request of turn k+1 arrives before every request of turn k was answered.
    for (let turn = 1; turn <= 3; turn++) {
      const firstNext = log.findIndex((entry) => entry.kind === 'arrive' && entry.turn === turn);
      const lastPrevious = log.findLastIndex((entry) => entry.kind === 'answer' && entry.turn === turn - 1);
      expect(lastPrevious).toBeLessThan(firstNext);
    }
    expect(result.stats).toMatchObject({ mode: 'sync', trajectoriesFinished: 4, groupsKept: 2 });
  });

  it('a full batch pauses the groups still running and carries them into the next step', async () => {
    const { gate, run } = await gatedLongTail();
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 1,
      overProvision: 1,
      partialRollout: false,
    });
    const problems = source(LONG_TAIL);
    // The long group hangs in its first engine call; the short group fills the batch.
    const first = await runRolloutStep(input({ config, problems }), run);
    expect(first.kept.map((group) => group.problem.id)).toEqual(['short']);
    expect(first.stats).toMatchObject({ groupsCarried: 1, trajectoriesParked: 2, trajectoriesFinished: 2 });
    const carried = first.state.parked[0]!;
    expect(carried.problem.id).toBe('long');
    expect(carried.trajectories.map((trajectory) => trajectory?.finish?.reason)).toEqual([
      'paused',
      'paused',
    ]);
    gate.open();
    const second = await runRolloutStep(input({ step: 1, config, problems, state: first.state }), run);
    expect(second.kept.map((group) => group.problem.id)).toEqual(['long']);
    expect(second.stats).toMatchObject({ trajectoriesResumed: 2, trajectoriesFinished: 2, groupsCarried: 0 });
    for (const trajectory of second.kept[0]!.trajectories) expect(trajectory.answer).toBe('42');
  });

  it('tail cut: once the KV held falls below the fraction of its peak, running trajectories pause and carry', async () => {
    const { gate, run } = await gatedLongTail();
    // The batch (2 groups) never fills while the long group hangs: only the tail cut ends the step.
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 2,
      overProvision: 0,
      partialRollout: false,
      kvBudgetTokens: 1_000_000,
      tailCut: 0.3,
    });
    const problems = source(LONG_TAIL);
    // The short trajectories' holds grow with their turns (about 4 × their prompt by the end);
    // once both have finished, the long pair's first prompts hold under a third of that peak and
    // nothing is left to start. One short trajectory still running keeps the held KV above 0.3.
    const first = await runRolloutStep(input({ config, problems }), run);
    expect(first.stats).toMatchObject({
      tailCut: true,
      groupsKept: 1,
      groupsCarried: 1,
      trajectoriesParked: 2,
    });
    expect(first.state.parked[0]?.trajectories.map((trajectory) => trajectory?.finish?.reason)).toEqual([
      'paused',
      'paused',
    ]);
    gate.open();
    const second = await runRolloutStep(input({ step: 1, config, problems, state: first.state }), run);
    expect(second.kept.map((group) => group.problem.id)).toEqual(['long']);
    expect(second.stats).toMatchObject({ tailCut: false, trajectoriesResumed: 2, trajectoriesFinished: 2 });
    expect(() => rolloutConfigSchema.parse({ tailCut: 0.5 })).toThrow(/tailCut needs kvBudgetTokens/);
  });

  it('tail cut: not while trajectories still queue for the active-trajectory limit', async () => {
    const { gate, run } = await gatedLongTail();
    // Three trajectories at a time: the long pair and one short; the other three shorts queue.
    // Each short that finishes drops the held KV far below its peak, but the queued ones are
    // work still to start, so the cut waits until every short group has run.
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 3,
      overProvision: 0,
      partialRollout: false,
      maxActiveTrajectories: 3,
      kvBudgetTokens: 1_000_000,
      tailCut: 0.3,
    });
    const problems = source([...LONG_TAIL, { id: 'short2', text: 'another short problem', answer: '42' }]);
    const first = await runRolloutStep(input({ config, problems }), run);
    expect(first.stats).toMatchObject({
      tailCut: true,
      groupsKept: 2,
      groupsCarried: 1,
      trajectoriesParked: 2,
    });
    expect(first.kept.map((group) => group.problem.id).sort()).toEqual(['short', 'short2']);
    gate.open();
  });

  it('partial rollout: parked trajectories resume next step with earlier segments and session state', async () => {
    let version = 0;
    const { router } = await replicas(2, { version: () => String(version) });
    const run = parts(router);
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 1,
      overProvision: 0,
      segmentToolCalls: 2,
      maxPolicyLag: 1,
    });
    const problems = source([{ id: 'p', text: 'a problem', answer: '42' }]);
    const first = await runRolloutStep(input({ config, problems }), run);
    expect(first.stats).toMatchObject({
      trajectoriesParked: 2,
      trajectoriesFinished: 0,
      groupsCarried: 1,
      groupsKept: 0,
    });
    const parked = first.state.parked[0]!.trajectories as Trajectory[];
    expect(parked.map((trajectory) => trajectory.toolCalls.length)).toEqual([2, 2]);
    expect(run.park.size).toBe(2);
    version = 1;
    const second = await runRolloutStep(
      input({ step: 1, policyVersion: 1, config, problems, state: first.state }),
      run,
    );
    expect(second.stats).toMatchObject({
      trajectoriesResumed: 2,
      trajectoriesFinished: 2,
      groupsKept: 1,
      groupsCarried: 0,
    });
    const [group] = second.kept;
    for (const trajectory of group!.trajectories) {
      // Earlier segments kept as they were, session state intact (x set in step 0 read in step 1).
      expect(trajectory.segments.slice(0, parked[trajectory.sample]!.segments.length)).toEqual(
        parked[trajectory.sample]!.segments,
      );
      expect(trajectory.toolCalls.map((call) => call.outcome.status)).toEqual(['ok', 'ok', 'ok']);
      expect(trajectory.answer).toBe('42');
      const models = trajectory.segments.filter((segment) => segment.kind === 'model');
      expect(models.map((segment) => [segment.step, segment.policyVersion])).toEqual([
        [0, 0],
        [0, 0],
        [1, 1],
        [1, 1],
      ]);
      expect(
        models.every((segment) => typeof segment.replica === 'string' && segment.replica.startsWith('http')),
      ).toBe(true);
    }
    expect(group!.rewards[0]).toBeGreaterThan(1);
    expect(group!.rewards[1]).toBe(0);
    expect((run.sandbox as ReturnType<typeof sandbox>).opened).toBe(2); // no session reopened
    expect(second.stats.replicas).toBeDefined();
    expect(Object.values(second.stats.replicas).reduce((sum, replica) => sum + replica.requests, 0)).toBe(4);
  });

  it.each(['drop', 'restart'] as const)(
    'staleness bound (%s): a parked trajectory too many versions old is handled and counted',
    async (stalePolicy) => {
      const { router } = await replicas(1, { version: () => '0' });
      const run = parts(router);
      const config = rolloutConfigSchema.parse({
        groupSize: 2,
        batchSize: 1,
        overProvision: 0,
        segmentToolCalls: 2,
        maxPolicyLag: 0,
        stalePolicy,
      });
      const problems = source([{ id: 'p', text: 'a problem', answer: '42' }]);
      const first = await runRolloutStep(input({ config, problems }), run);
      const second = await runRolloutStep(
        input({ step: 1, policyVersion: 1, config, problems, state: first.state }),
        run,
      );
      expect(second.stats.trajectoriesStale).toBe(2);
      if (stalePolicy === 'drop') {
        expect(second.dropped.map((group) => group.dropReason)).toEqual(['stale']);
        expect(second.state.parked).toEqual([]);
      } else {
        // Restarted from scratch: a fresh first segment, parked again.
        expect(second.stats).toMatchObject({
          trajectoriesResumed: 0,
          trajectoriesParked: 2,
          groupsCarried: 1,
        });
        const restarted = second.state.parked[0]!.trajectories as Trajectory[];
        expect(
          restarted.every((trajectory) =>
            trajectory.segments.every((segment) => segment.kind !== 'model' || segment.step === 1),
          ),
        ).toBe(true);
      }
      expect(run.park.size).toBe(stalePolicy === 'drop' ? 0 : 2);
    },
  );

  it('fill batch: parked groups do not hold back fresh ones, up to N batches undecided', async () => {
    const { router } = await replicas(1);
    const config = (fillBatch: boolean) =>
      rolloutConfigSchema.parse({
        groupSize: 2,
        batchSize: 1,
        overProvision: 0,
        segmentToolCalls: 2,
        stages: [{ maxTokens: 4096, maxToolCalls: 8, partialRollouts: 3 }],
        fillBatch,
      });
    const many = () =>
      source(
        Array.from({ length: 8 }, (_, index) => ({
          id: `p${index}`,
          text: `problem ${index}`,
          answer: '42',
        })),
      );
    const plain = await runRolloutStep(input({ config: config(false), problems: many() }), parts(router));
    expect(plain.stats).toMatchObject({ groupsKept: 0, groupsCarried: 1 });
    const problems = many();
    const filled = await runRolloutStep(input({ config: config(true), problems }), parts(router));
    // Every group parks after two code calls; fresh ones start until 3 (N × B) are undecided.
    expect(filled.stats).toMatchObject({ groupsKept: 0, groupsCarried: 3, trajectoriesParked: 6 });
    expect(problems.taken()).toBe(3);
  });

  it('adaptive batch: all-equal groups are dropped and fresh problems back-fill to B kept groups', async () => {
    const { router } = await replicas(2);
    const verdicts: Record<string, (sample: number) => boolean> = {
      'all-right': () => true,
      mixed1: (sample) => sample === 0,
      'all-wrong': () => false,
      mixed2: (sample) => sample === 1,
      spare: () => true,
    };
    const run = parts(router, {
      grade: async (trajectory) => ({ correct: verdicts[trajectory.problemId ?? '']!(trajectory.sample) }),
    });
    const problems = source(Object.keys(verdicts).map((id) => ({ id, text: `problem ${id}`, answer: '42' })));
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 2,
      overProvision: 0,
      partialRollout: false,
    });
    const result = await runRolloutStep(input({ config, problems }), run);
    expect(result.kept.map((group) => group.problem.id).sort()).toEqual(['mixed1', 'mixed2']);
    expect(result.dropped.map((group) => [group.problem.id, group.dropReason]).sort()).toEqual([
      ['all-right', 'all-correct'],
      ['all-wrong', 'all-wrong'],
    ]);
    expect(result.stats.groupsBackfilled).toBe(2);
    expect(problems.taken()).toBe(4); // the spare problem was never started
  });

  it('KV budget: a trajectory heavier than the budget runs only when no other holds any', async () => {
    // Each request is held a moment, so trajectories that may overlap do.
    const { router, log } = await replicas(2, {
      gate: () => new Promise((resolve) => setTimeout(resolve, 5)),
    });
    const run = parts(router);
    const problems = source(LONG_TAIL);
    // Every trajectory weighs at least its prompt, more than 1 token: one at a time.
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 2,
      overProvision: 0,
      partialRollout: false,
      kvBudgetTokens: 1,
    });
    const result = await runRolloutStep(input({ config, problems }), run);
    expect(result.stats.trajectoriesFinished).toBe(4);
    // One trajectory in flight, and it makes one request at a time: never two requests at once.
    let inFlight = 0;
    let most = 0;
    for (const entry of log) {
      inFlight += entry.kind === 'arrive' ? 1 : -1;
      most = Math.max(most, inFlight);
    }
    expect(most).toBe(1);
    expect(log).toHaveLength(32); // 4 trajectories × 4 requests, each arriving and answered
  });

  it('a replica that goes down mid-run is taken out; its trajectories continue on the other', async () => {
    let calls = 0;
    const down = deferred();
    const { router, servers } = await replicas(2, {
      gate: async () => {
        calls++;
        if (calls === 3) down.open();
      },
    });
    const run = parts(router);
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 2,
      overProvision: 0,
      partialRollout: false,
    });
    const step = runRolloutStep(input({ config, problems: source(LONG_TAIL) }), run);
    await down.promise;
    await servers[0]!.close();
    const result = await step;
    expect(result.stats.trajectoriesFinished).toBe(4);
    for (const group of [...result.kept, ...result.dropped]) {
      for (const trajectory of group.trajectories) {
        expect(trajectory.finish?.reason).toBe('answer');
        expect(trajectory.toolCalls).toHaveLength(3);
      }
    }
    const stats = router.replicaStats();
    const [first, second] = Object.values(stats);
    expect(first!.healthy).toBe(false);
    expect(first!.failures).toBeGreaterThan(0);
    expect(second!.requests).toBeGreaterThan(0);
  });

  it('defect 1 (the group filter compares composite rewards, not correctness): all-correct samples with different code-call counts are not kept', async () => {
    // Sessions alternate: the first program's output says whether the sample answers at once
    // (one code call) or runs a second program (two): all correct, rewards 1.12 and 1.14.
    let sessions = 0;
    const alternating = functionSandbox((_code, state) => {
      if (!state.has('id')) state.set('id', sessions++);
      const stdout = (state.get('id') as number) % 2 === 0 ? 'short\n' : 'long\n';
      return { status: 'ok', stdout, stderr: '', ms: 1 };
    });
    const server = await startScriptedSglangServer({
      model: {
        parts: [
          '<code>\nprint(1)\n</code>',
          (output) => (output.includes('short') ? '\\boxed{42}' : '<code>\nprint(2)\n</code>'),
          '\\boxed{42}',
        ],
      },
      tokenizer,
    });
    const engine = createEngine({ api: 'sglang', url: server.url, timeoutMs: 30_000 });
    cleanups.push(
      () => server.close(),
      () => engine.close(),
    );
    const router = new Router({
      replicas: [{ name: server.url, engine }],
      policy: createRouterPolicy('prefix-aware'),
      clock: systemClock,
    });
    const run = parts(router, { sandbox: alternating, grade: async () => ({ correct: true }) });
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 1,
      overProvision: 0,
      partialRollout: false,
      stages: [{ maxTokens: 4096, maxToolCalls: 4, partialRollouts: 1 }],
    });
    const result = await runRolloutStep(
      input({ config, problems: source([{ id: 'p', text: 'a problem', answer: '42' }]) }),
      run,
    );
    const group = result.dropped[0]!;
    expect(group.trajectories.map((trajectory) => trajectory.toolCalls.length).sort()).toEqual([1, 2]);
    expect(group.rewards.map((reward) => reward?.toFixed(2)).sort()).toEqual(['1.12', '1.14']);
    expect(group).toMatchObject({ kept: false, dropReason: 'all-correct', correct: [true, true] });
    expect(result.kept).toEqual([]);
  });

  it('groups.jsonl records per member `correct` beside `rewards`, and per group `oldestPolicyVersion`', async () => {
    const { router } = await replicas(1, { version: () => '3' });
    const run = parts(router, {
      grade: async (trajectory) =>
        trajectory.sample === 2 ? { correct: null } : { correct: trajectory.sample === 0 },
    });
    const config = rolloutConfigSchema.parse({
      groupSize: 3,
      batchSize: 1,
      overProvision: 0,
      partialRollout: false,
    });
    const result = await runRolloutStep(
      input({ config, policyVersion: 3, problems: source([{ id: 'p', text: 'p', answer: '42' }]) }),
      run,
    );
    const record = groupRecord(result.kept[0]!);
    expect(record).toMatchObject({ correct: [true, false, null], oldestPolicyVersion: 3 });
    expect(record.rewards[0]).toBeGreaterThan(1);
    expect(record.rewards.slice(1)).toEqual([0, null]);
  });

  /**
   * Two groups with a signal, batch 1: group a is graded only once both of group b's
   * trajectories have finished, and b's grades wait until a is decided, so b finishes whole
   * after the batch is full and is carried, finished, into step 1 at version 1.
   */
  async function deferredKeptGroup(stalePolicy: 'drop' | 'restart') {
    const { router } = await replicas(1, { version: () => '0' });
    const aDecided = deferred();
    const bFinished = deferred();
    let bGrades = 0;
    const run = parts(router, {
      grade: async (trajectory) => {
        if (trajectory.problemId === 'b') {
          if (++bGrades === 2) bFinished.open();
          await aDecided.promise;
        } else await bFinished.promise;
        return { correct: trajectory.sample % 2 === 0 };
      },
      onEvent: (event) => {
        if (event.type === 'group-decide' && event.group.problem.id === 'a') aDecided.open();
      },
    });
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 1,
      overProvision: 1,
      partialRollout: false,
      maxPolicyLag: 0,
      stalePolicy,
    });
    const problems = source([
      { id: 'a', text: 'problem a', answer: '42' },
      { id: 'b', text: 'problem b', answer: '42' },
    ]);
    const first = await runRolloutStep(input({ config, problems }), run);
    const second = await runRolloutStep(
      input({ step: 1, policyVersion: 1, config, problems, state: first.state }),
      run,
    );
    return { first, second };
  }

  it('defect 5 (the staleness bound has holes): a kept group deferred past a full batch is checked on every member', async () => {
    const { first, second } = await deferredKeptGroup('drop');
    // Group b finished whole after the batch was full: carried with no unfinished member.
    expect(first.stats).toMatchObject({ groupsKept: 1, groupsCarried: 1, trajectoriesParked: 0 });
    expect(first.state.parked[0]!.trajectories.every((t) => t?.finish?.reason === 'answer')).toBe(true);
    expect(second.kept).toEqual([]);
    expect(second.dropped.map((group) => [group.dropReason, group.oldestPolicyVersion])).toEqual([
      ['stale', 0],
    ]);
    expect(second.stats.trajectoriesStale).toBe(2);
  });

  it('defect 5 (restart favours short trajectories): a stale member restarts its whole group, its finished sibling too', async () => {
    // Group a: one sample finishes; the other's second engine call waits until group b is
    // decided, so the full batch pauses it. At version 2 (lag bound 1) it is stale.
    const bDecided = deferred();
    const aFinished = deferred();
    let version = 0;
    let held = 0;
    const { router } = await replicas(1, {
      version: () => String(version),
      gate: async (context) => {
        if (
          version === 0 &&
          context.includes('problem a') &&
          context.includes('</interpreter>') &&
          ++held === 2
        )
          await bDecided.promise;
      },
    });
    const run = parts(router, {
      grade: async (trajectory) => {
        if (trajectory.problemId === 'a') aFinished.open();
        else await aFinished.promise;
        return { correct: trajectory.sample % 2 === 0 };
      },
      onEvent: (event) => {
        if (event.type === 'group-decide' && event.group.problem.id === 'b') bDecided.open();
      },
    });
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 1,
      overProvision: 1,
      partialRollout: false,
      maxPolicyLag: 1,
      stalePolicy: 'restart',
    });
    const problems = source([
      { id: 'a', text: 'problem a', answer: '42' },
      { id: 'b', text: 'problem b', answer: '42' },
    ]);
    const first = await runRolloutStep(input({ config, problems }), run);
    expect(first.kept.map((group) => group.problem.id)).toEqual(['b']);
    const carried = first.state.parked[0]!.trajectories;
    expect(carried.map((trajectory) => trajectory?.finish?.reason).sort()).toEqual(['answer', 'paused']);
    version = 2;
    const second = await runRolloutStep(
      input({ step: 1, policyVersion: 2, config, problems, state: first.state }),
      run,
    );
    // Trained at version 2 with maxPolicyLag 1: no member may hold version-0 tokens.
    const versions = second.kept.flatMap((group) =>
      group.trajectories.flatMap((trajectory) =>
        trajectory.segments.flatMap((segment) => (segment.kind === 'model' ? [segment.policyVersion] : [])),
      ),
    );
    expect(new Set(versions)).toEqual(new Set([2]));
    expect(second.kept.map((group) => [group.problem.id, group.oldestPolicyVersion])).toEqual([['a', 2]]);
    expect(second.stats.trajectoriesStale).toBe(2);
  });

  it('an interrupt mid-step records no aborted trajectory and starts no fresh group', async () => {
    const { gate, run } = await gatedLongTail();
    const interrupt = new AbortController();
    run.signal = interrupt.signal;
    const problems = source([
      ...LONG_TAIL,
      ...Array.from({ length: 50 }, (_, index) => ({
        id: `more${index}`,
        text: `more ${index}`,
        answer: '42',
      })),
    ]);
    const config = rolloutConfigSchema.parse({
      groupSize: 2,
      batchSize: 4,
      overProvision: 0,
      partialRollout: false,
    });
    const step = runRolloutStep(input({ config, problems }), run);
    await until(() => run.events.filter((event) => event.type === 'group-decide').length >= 3);
    const takenBefore = problems.taken();
    interrupt.abort();
    gate.open();
    const result = await step;
    const aborted = run.events.filter(
      (event) => event.type === 'trajectory-finish' && event.trajectory.finish?.reason === 'aborted',
    );
    expect(aborted).toEqual([]);
    expect(result.dropped.filter((group) => group.dropReason === 'rewards-missing')).toEqual([]);
    expect(problems.taken()).toBe(takenBefore);
  });

  it('a missing grade is a missing reward, never a wrong one', async () => {
    const { router } = await replicas(1);
    const run = parts(router, {
      grade: async (trajectory) => (trajectory.sample === 0 ? { correct: null } : { correct: false }),
    });
    const config = rolloutConfigSchema.parse({
      groupSize: 3,
      batchSize: 1,
      overProvision: 0,
      partialRollout: false,
    });
    const result = await runRolloutStep(
      input({ config, problems: source([{ id: 'p', text: 'p', answer: '1' }]) }),
      run,
    );
    expect(result.stats.rewardsMissing).toBe(1);
    expect(result.dropped[0]).toMatchObject({ rewards: [null, 0, 0], dropReason: 'all-wrong' });
    const missing = result.dropped[0]!.trajectories[0]!;
    expect(missing.meta).toMatchObject({ correct: null, reward: null, missingReason: 'grader-unavailable' });
  });
});

describe('rollout bench', () => {
  it('runs the four configurations on the same replicas and rates each against static sync', async () => {
    const { router, engines } = await replicas(2);
    const run = parts(router);
    const rows = await runRolloutBench({
      replicas: engines,
      tokenizer,
      dialect: tagsDialect,
      sandbox: run.sandbox,
      grade: run.grade,
      clock: systemClock,
      random: seededRandom(1),
      problems: LONG_TAIL,
      steps: 2,
      temperature: 1,
      config: { groupSize: 2, batchSize: 1, overProvision: 0, segmentToolCalls: 1 },
    });
    expect(rows.map((row) => row.name)).toEqual(
      ROLLOUT_BENCH_CONFIGURATIONS.map((configuration) => configuration.name),
    );
    expect(rows[0]!.speedup).toBe(1);
    expect(rows.map((row) => row.steps.map((stats) => stats.mode))).toEqual([
      ['sync', 'sync'],
      ['async', 'async'],
      ['async', 'async'],
      ['async', 'async'],
    ]);
    // Partial rollout parks after one tool call; the full configurations finish within the step.
    expect(rows[1]!.steps[0]!.trajectoriesParked).toBe(0);
    expect(rows[2]!.steps[0]!.trajectoriesParked).toBeGreaterThan(0);
    expect(rows[3]!.steps[0]!.router).toBe('prefix-aware');
    for (const row of rows) expect(row.tokensPerSecond).toBeGreaterThan(0);
  });
});
