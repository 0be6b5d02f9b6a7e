/**
 * Scheduling by what a group's finished members say: sibling-informed admission order
 * (`siblingPriority`) and early abandonment (`abandonAgreeing`), with an in-process scripted
 * engine and a function sandbox. Assertions are on the order of events and on counts.
 */
import { describe, expect, it } from 'vitest';
import { functionSandbox, ScriptedEngine, type ScriptPart, seededRandom } from '../../test/agent-fixtures.ts';
import { SessionPark } from '../agent/session-park.ts';
import { createByteLevelTokenizer } from '../engine/byte-level-tokenizer.ts';
import type { Engine, GenerateRequest, GenerateResult } from '../engine/types.ts';
import { tagsDialect } from '../protocol/tags-dialect.ts';
import { systemClock } from '../shared/clock.ts';
import type { Trajectory } from '../trajectory/trajectory.ts';
import { rolloutConfigSchema } from './rollout-config.ts';
import { groupRecord } from './rollout-records.ts';
import { initialRolloutState, runRolloutStep } from './run-rollout-step.ts';
import type { GroupOutcome, RolloutEvent, RolloutParts, RolloutProblem } from './types.ts';

const tokenizer = createByteLevelTokenizer();

/** One code call, then the answer it printed. */
const PARTS: ScriptPart[] = ['<code>\nprint(42)\n</code>', (output) => `\\boxed{${output.trim()}}`];

function source(ids: string[]) {
  const list: RolloutProblem[] = ids.map((id) => ({ id, text: `problem ${id}`, answer: '42' }));
  let index = 0;
  return { next: () => list[index++] ?? null };
}

/** Each member's verdict by problem and sample. */
type Verdicts = Record<string, (sample: number) => boolean>;

function stepParts(engine: Engine, verdicts: Verdicts, extra: Partial<RolloutParts> = {}) {
  const events: RolloutEvent[] = [];
  const sandbox = functionSandbox(() => ({ status: 'ok', stdout: '42\n', stderr: '', ms: 1 }));
  const park = new SessionPark();
  const parts: RolloutParts = {
    engine,
    routerName: 'single',
    tokenizer,
    dialect: tagsDialect,
    sandbox,
    park,
    grade: async (trajectory: Trajectory) => ({
      correct: verdicts[trajectory.problemId ?? '']?.(trajectory.sample) ?? null,
    }),
    clock: systemClock,
    random: seededRandom(5),
    onEvent: (event) => events.push(event),
    ...extra,
  };
  const finishOrder = () =>
    events.flatMap((event) =>
      event.type === 'trajectory-finish' ? [`${event.trajectory.problemId}${event.trajectory.sample}`] : [],
    );
  return { parts, events, sandbox, park, finishOrder };
}

const step = (parts: RolloutParts, problems: ReturnType<typeof source>, config: unknown) =>
  runRolloutStep(
    {
      step: 0,
      policyVersion: 0,
      state: initialRolloutState(),
      problems,
      config: rolloutConfigSchema.parse(config),
      agent: { sampling: { temperature: 1, topP: 1 } },
    },
    parts,
  );

/** One trajectory at a time (every trajectory weighs more than a 1-token budget), in full. */
const ONE_AT_A_TIME = { groupSize: 3, overProvision: 0, partialRollout: false, kvBudgetTokens: 1 };

describe('sibling-informed admission order (siblingPriority)', () => {
  it('starts members of groups with a known verdict by class: known kept first, likely dropped last', async () => {
    // A: all right; B: its second member wrong. One trajectory at a time, queued A0 A1 A2 B0 B1 B2.
    const verdicts: Verdicts = { A: () => true, B: (sample) => sample !== 1 };
    const plain = stepParts(new ScriptedEngine({ model: { parts: PARTS }, tokenizer }), verdicts);
    await step(plain.parts, source(['A', 'B']), { ...ONE_AT_A_TIME, batchSize: 2 });
    expect(plain.finishOrder()).toEqual(['A0', 'A1', 'A2', 'B0', 'B1', 'B2']);

    // With the order: once A0 and A1 agree, A2 is likely dropped and waits behind B (no verdict
    // yet); once B0 and B1 disagree, B is known kept and B2 goes before A2.
    const ordered = stepParts(new ScriptedEngine({ model: { parts: PARTS }, tokenizer }), verdicts);
    const result = await step(ordered.parts, source(['A', 'B']), {
      ...ONE_AT_A_TIME,
      batchSize: 2,
      siblingPriority: true,
    });
    expect(ordered.finishOrder()).toEqual(['A0', 'A1', 'B0', 'B1', 'B2', 'A2']);
    expect(result.kept.map((group) => group.problem.id)).toEqual(['B']);
    expect(result.dropped.map((group) => group.dropReason)).toEqual(['all-correct']);
  });

  it('needs the KV budget, whose queue it orders', () => {
    expect(() => rolloutConfigSchema.parse({ siblingPriority: true })).toThrow(
      /siblingPriority needs kvBudgetTokens/,
    );
    expect(() =>
      rolloutConfigSchema.parse({ mode: 'sync', siblingPriority: true, kvBudgetTokens: 10 }),
    ).toThrow(/siblingPriority applies to mode async/);
  });
});

describe('early abandonment (abandonAgreeing)', () => {
  it('once m finished members agree, a member not started yet never runs and the group is dropped as abandoned', async () => {
    // The third member would have been wrong: run whole, the group is kept.
    const verdicts: Verdicts = { A: (sample) => sample !== 2 };
    const whole = new ScriptedEngine({ model: { parts: PARTS }, tokenizer });
    const plain = stepParts(whole, verdicts);
    const kept = await step(plain.parts, source(['A']), { ...ONE_AT_A_TIME, batchSize: 1 });
    expect(kept.kept.map((group) => group.problem.id)).toEqual(['A']);
    expect(whole.requests).toHaveLength(6);

    // Abandoned after two agree: the kept group is lost (the bias the option buys its saving with).
    const engine = new ScriptedEngine({ model: { parts: PARTS }, tokenizer });
    const run = stepParts(engine, verdicts);
    const result = await step(run.parts, source(['A']), {
      ...ONE_AT_A_TIME,
      batchSize: 1,
      abandonAgreeing: 2,
    });
    expect(run.finishOrder()).toEqual(['A0', 'A1']);
    expect(engine.requests).toHaveLength(4);
    expect(result.kept).toEqual([]);
    expect(result.dropped).toHaveLength(1);
    const dropped = result.dropped[0];
    expect(dropped?.dropReason).toBe('abandoned');
    expect(dropped?.trajectories.map((trajectory) => trajectory.sample)).toEqual([0, 1]);
    expect(dropped?.abandoned).toEqual([]); // the third never started
    expect(result.stats).toMatchObject({ groupsAbandoned: 1, trajectoriesAbandoned: 1, groupsCarried: 0 });
    expect(result.state.parked).toEqual([]);
  });

  it('a running member is cut when its group is abandoned, and its session closed', async () => {
    // The third trajectory to call the engine hangs in that call until the engine sees the
    // pause, or until the other two have been graded and the step has had its chance to act.
    // Grades wait until it is in that call.
    const release = deferred();
    const thirdCalled = deferred();
    let graded = 0;
    const sessions: string[] = [];
    const scripted = new ScriptedEngine({ model: { parts: PARTS }, tokenizer });
    const engine: Engine = {
      name: 'gated',
      generate: async (request: GenerateRequest, signal?: AbortSignal): Promise<GenerateResult> => {
        const session = request.sessionId ?? '';
        if (!sessions.includes(session)) sessions.push(session);
        if (session === sessions[2]) {
          thirdCalled.open();
          const aborted = new Promise<void>((resolve) => signal?.addEventListener('abort', () => resolve()));
          const cut = await Promise.race([aborted.then(() => true), release.promise.then(() => false)]);
          if (cut) return ABORTED;
        }
        return scripted.generate(request);
      },
    };
    const run = stepParts(
      engine,
      { A: () => true },
      {
        grade: async () => {
          await thirdCalled.promise;
          if (++graded === 2) setImmediate(release.open);
          return { correct: true };
        },
      },
    );
    const result = await step(run.parts, source(['A']), {
      groupSize: 3,
      batchSize: 1,
      overProvision: 0,
      partialRollout: false,
      abandonAgreeing: 2,
    });
    expect(result.dropped.map((group) => group.dropReason)).toEqual(['abandoned']);
    const abandoned = result.dropped[0]?.abandoned ?? [];
    // The member cut in its engine call is the one stopped, as a pause leaves it.
    expect(abandoned.map((trajectory) => [trajectory.id, trajectory.finish?.reason])).toEqual([
      [sessions[2], 'paused'],
    ]);
    // groups.jsonl names the member stopped, so its last `paused` line is not read as parked.
    expect(groupRecord(result.dropped[0] as GroupOutcome).abandonedIds).toEqual([sessions[2]]);
    expect(result.state.parked).toEqual([]);
    // Every session opened was closed; none is left in the park.
    expect(run.park.size).toBe(0);
    expect(run.sandbox.closed).toBe(run.sandbox.opened);
  });

  it("with abandonVerdict 'wrong' only agreeing wrong answers abandon a group", async () => {
    const config = { ...ONE_AT_A_TIME, batchSize: 2, abandonAgreeing: 2, abandonVerdict: 'wrong' };
    const engine = new ScriptedEngine({ model: { parts: PARTS }, tokenizer });
    const run = stepParts(engine, { right: () => true, wrong: () => false });
    const result = await step(run.parts, source(['right', 'wrong']), config);
    // The all-right group runs whole; the all-wrong one stops after two.
    expect(run.finishOrder()).toEqual(['right0', 'right1', 'right2', 'wrong0', 'wrong1']);
    expect(result.dropped.map((group) => [group.problem.id, group.dropReason])).toEqual([
      ['right', 'all-correct'],
      ['wrong', 'abandoned'],
    ]);
  });

  it('applies to async mode, below the group size', () => {
    expect(() => rolloutConfigSchema.parse({ mode: 'sync', abandonAgreeing: 4 })).toThrow(/mode async/);
    expect(() => rolloutConfigSchema.parse({ groupSize: 4, abandonAgreeing: 4 })).toThrow(/below groupSize/);
    expect(rolloutConfigSchema.parse({ groupSize: 4, abandonAgreeing: 3 }).abandonAgreeing).toBe(3);
  });
});

describe('a stale group restarted', () => {
  it('forgets the verdicts of the members it threw away: abandonment counts only the new ones', async () => {
    // Step 0: A's first member answers at once (wrong); the other two run one code call and
    // park. Step 1 comes two policy versions later, so A is stale and restarts whole. With
    // abandonAgreeing 2, A may be abandoned only once two of its NEW members agree.
    const direct = new ScriptedEngine({ model: { parts: ['\\boxed{7}'] }, tokenizer });
    const coded = new ScriptedEngine({ model: { parts: PARTS }, tokenizer });
    const sessions: string[] = [];
    const engine: Engine = {
      name: 'mixed',
      generate: async (request: GenerateRequest): Promise<GenerateResult> => {
        const session = request.sessionId ?? '';
        if (!sessions.includes(session)) sessions.push(session);
        // A's first member, and the first member started after the restart, answer at once.
        return ([0, 3].includes(sessions.indexOf(session)) ? direct : coded).generate(request);
      },
    };
    const run = stepParts(engine, {}, { grade: async () => ({ correct: false }) });
    const config = rolloutConfigSchema.parse({
      groupSize: 3,
      batchSize: 1,
      overProvision: 0,
      partialRollout: true,
      segmentToolCalls: 1,
      kvBudgetTokens: 1,
      abandonAgreeing: 2,
    });
    const problems = source(['A', 'B']);
    let state = initialRolloutState();
    const finishedBy: number[] = [];
    const history: string[] = [];
    for (let index = 0; index < 3; index++) {
      const result = await runRolloutStep(
        {
          step: index,
          policyVersion: 2 * index,
          state,
          problems,
          config,
          agent: { sampling: { temperature: 1, topP: 1 } },
        },
        run.parts,
      );
      state = result.state;
      for (const group of result.dropped) {
        if (group.dropReason === 'abandoned' && group.problem.id === 'A')
          finishedBy.push(group.trajectories.length);
      }
      history.push(
        `${index}: dropped ${result.dropped.map((group) => `${group.problem.id}/${group.dropReason}/${group.trajectories.length}`).join(',')}; kept ${result.kept.map((group) => group.problem.id).join(',')}; parked ${result.state.parked.map((parked) => parked.problem.id).join(',')}; stale ${result.stats.trajectoriesStale}`,
      );
    }
    // Whenever A was abandoned, at least two finished members agreed.
    for (const finished of finishedBy) expect(finished).toBeGreaterThanOrEqual(2);
    // Restarted at steps 1 and 2 (two versions behind each time), A keeps running: one new
    // member's verdict is not two agreeing ones. (Before the fix, step 1 read "A/abandoned/1".)
    expect(history).toEqual([
      '0: dropped ; kept ; parked A; stale 0',
      '1: dropped ; kept ; parked A; stale 3',
      '2: dropped ; kept ; parked A; stale 3',
    ]);
  });
});

const ABORTED: GenerateResult = {
  tokenIds: [],
  text: '',
  logprobs: [],
  finishReason: 'abort',
  matchedStop: null,
  policyVersion: 0,
};

function deferred() {
  let open = () => {};
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
