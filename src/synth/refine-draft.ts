/**
 * Stage 2(b)–(d) on one draft: executability (every block in order in one jailed session; a
 * block that fails where the teacher's output does not show a failure is a failure), feedback
 * alignment (real outputs replace simulated ones; where they differ, a judge decides whether
 * the following reasoning still holds: a rule when both outputs are numbers, the teacher
 * otherwise; broken continuations are dropped or regenerated), and tool-use rationality
 * (AST depth, lines and largest constant of each block measured by Python's `ast` in the
 * sandbox; trivial blocks become text or drop the sample).
 */
import type { SandboxProvider } from '../sandbox/types.ts';
import { type Draft, type DraftCall, draftText, parseDraft, realOutput } from './synth-draft.ts';
import { fillPrompt, type SynthPrompts } from './synth-prompts.ts';
import type { SynthRecord } from './synth-record.ts';
import type { Teacher, TeacherPurpose } from './teacher.ts';

/** Thresholds of stage 2(d): a block is trivial when it is at or under all three. */
export type RationalityOptions = {
  maxTrivialLines: number;
  maxTrivialDepth: number;
  /** Integer and float constants all below this in absolute value. */
  trivialConstantBelow: number;
  /** What happens to a trivial block. */
  trivial: 'to-text' | 'drop';
};

export const DEFAULT_RATIONALITY: RationalityOptions = {
  maxTrivialLines: 1,
  maxTrivialDepth: 6,
  trivialConstantBelow: 100,
  trivial: 'to-text',
};

export type RefineContext = {
  record: SynthRecord;
  teacher: Teacher;
  sandbox: SandboxProvider;
  prompts: SynthPrompts;
  executability: boolean;
  alignment: boolean;
  rationality: RationalityOptions | null;
  onMismatch: 'drop' | 'regenerate';
  timeoutMs: number;
  maxTokens: number;
  temperature: number;
  /** Teacher tokens spent for this record, added to as requests complete. */
  spend: { tokens: number };
  signal?: AbortSignal;
};

export type RefineResult =
  | { status: 'ok'; draft: Draft; notes: string[] }
  | { status: 'drop'; stage: 'executability' | 'alignment' | 'rationality'; reason: string; detail: unknown }
  /** A block failed unexpectedly: the draft up to it, with its real error shown (stage 3's input). */
  | { status: 'failed-call'; prefix: Draft; index: number; detail: unknown };

const FAILURE_WORDS = /Error|Traceback|Exception/;

/** Whether the teacher's own output for a call already shows the failure (then it is expected). */
function failureExpected(call: DraftCall): boolean {
  return call.simulated !== null && FAILURE_WORDS.test(call.simulated);
}

function isOutage(call: DraftCall): boolean {
  return call.outcome?.status === 'killed';
}

/** Runs every call of `draft` in order in one fresh session, filling `outcome`. */
export async function executeDraft(draft: Draft, sandbox: SandboxProvider, timeoutMs: number): Promise<void> {
  const session = await sandbox.openSession();
  try {
    for (const item of draft) {
      if (item.kind !== 'call') continue;
      item.outcome = await session.execute(item.code, { timeoutMs });
    }
  } finally {
    await session.close();
  }
}

const NUMBER = /^-?\d+(?:\.\d+)?(?:\/\d+)?$/;

function textAfter(draft: Draft, index: number): string {
  return draftText(draft.slice(index + 1));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Asks the teacher; the answer text, or null on an outage. Tokens go to `context.spend`. */
export async function askTeacher(
  context: RefineContext,
  purpose: TeacherPurpose,
  content: string,
): Promise<string | null> {
  const result = await context.teacher.complete(
    {
      purpose,
      recordId: context.record.id,
      messages: [{ role: 'user', content }],
      maxTokens: context.maxTokens,
      temperature: context.temperature,
    },
    context.signal,
  );
  if (result.status !== 'ok') return null;
  if (!result.fromJournal)
    context.spend.tokens += result.answer.promptTokens + result.answer.completionTokens;
  return result.answer.text;
}

/**
 * Whether the reasoning after a call still holds with the real output. Numbers: it is broken
 * when the following text quotes the simulated number. Otherwise the teacher judges.
 */
export async function judgeFollowing(
  context: RefineContext,
  simulated: string,
  real: string,
  following: string,
): Promise<'holds' | 'broken' | 'unavailable'> {
  if (NUMBER.test(simulated) && NUMBER.test(real)) {
    const quoted = new RegExp(`(^|[^\\d.])${escapeRegExp(simulated)}(?![\\d]|\\.\\d)`).test(following);
    return quoted ? 'broken' : 'holds';
  }
  const answer = await askTeacher(
    context,
    'judge',
    fillPrompt(context.prompts.judge, { simulated, real, following }),
  );
  if (answer === null) return 'unavailable';
  return /^\W*HOLDS/i.test(answer.trim()) ? 'holds' : 'broken';
}

/** Measures each block with Python's `ast`, in the sandbox (model code is never parsed here). */
export async function measureBlocks(
  codes: readonly string[],
  sandbox: SandboxProvider,
  timeoutMs: number,
): Promise<({ lines: number; depth: number; maxConstant: number } | null)[]> {
  if (codes.length === 0) return [];
  const program = [
    'import ast, json',
    `_sources = json.loads(${JSON.stringify(JSON.stringify(codes))})`,
    'def _depth(node):',
    '    return 1 + max((_depth(child) for child in ast.iter_child_nodes(node)), default=0)',
    'def _measure(source):',
    '    try:',
    '        tree = ast.parse(source)',
    '    except SyntaxError:',
    '        return None',
    '    constants = [abs(n.value) for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) and not isinstance(n.value, bool)]',
    "    lines = [l for l in source.splitlines() if l.strip() and not l.strip().startswith('#')]",
    "    return {'lines': len(lines), 'depth': _depth(tree), 'maxConstant': float(max(constants, default=0))}",
    'print(json.dumps([_measure(s) for s in _sources]))',
  ].join('\n');
  const session = await sandbox.openSession();
  try {
    const outcome = await session.execute(program, { timeoutMs });
    if (outcome.status !== 'ok') return codes.map(() => null);
    return JSON.parse(outcome.stdout.trim()) as ({
      lines: number;
      depth: number;
      maxConstant: number;
    } | null)[];
  } finally {
    await session.close();
  }
}

/** A trivial call written as text: `EXPR = OUTPUT` for `print(EXPR)`, else a sentence. */
function callAsText(call: DraftCall): string {
  const output = (call.useReal ? realOutput(call) : call.simulated) ?? realOutput(call) ?? '';
  const printed = /^print\((.*)\)$/s.exec(call.code.trim());
  return printed ? `${printed[1]!.trim()} = ${output}` : `Computing directly gives ${output}.`;
}

async function alignCalls(
  draft: Draft,
  context: RefineContext,
  notes: string[],
  depth: number,
): Promise<RefineResult> {
  for (let index = 0; index < draft.length; index++) {
    const call = draft[index]!;
    // A call already aligned (the prefix of a regenerated continuation) is not judged again.
    if (call.kind !== 'call' || call.outcome === null || call.useReal) continue;
    const real = realOutput(call)!;
    if (call.simulated === null || call.simulated.replace(/\s+/g, ' ') === real.replace(/\s+/g, ' ')) {
      call.useReal = true;
      continue;
    }
    const verdict = await judgeFollowing(context, call.simulated, real, textAfter(draft, index));
    if (verdict === 'unavailable')
      return { status: 'drop', stage: 'alignment', reason: 'teacher-unavailable', detail: { call: index } };
    call.useReal = true;
    if (verdict === 'holds') {
      notes.push('output-replaced');
      continue;
    }
    const detail = { simulated: call.simulated, real, code: call.code };
    if (context.onMismatch === 'drop' || depth > 0)
      return { status: 'drop', stage: 'alignment', reason: 'feedback-mismatch', detail };
    const prefix = draft.slice(0, index + 1);
    const continuation = await askTeacher(
      context,
      'self-correct',
      fillPrompt(context.prompts.continue, { problem: context.record.problem, prefix: draftText(prefix) }),
    );
    if (continuation === null)
      return { status: 'drop', stage: 'alignment', reason: 'teacher-unavailable', detail };
    notes.push('continuation-regenerated');
    const regenerated = [...prefix, ...parseDraft(continuation)];
    return refineDraft(regenerated, context, depth + 1, notes);
  }
  return { status: 'ok', draft, notes };
}

async function rationalize(
  draft: Draft,
  context: RefineContext,
  options: RationalityOptions,
  notes: string[],
): Promise<RefineResult> {
  const calls = draft.filter((item): item is DraftCall => item.kind === 'call');
  const measures = await measureBlocks(
    calls.map((call) => call.code),
    context.sandbox,
    context.timeoutMs,
  );
  const trivial = new Set<DraftCall>();
  calls.forEach((call, index) => {
    const measure = measures[index];
    if (
      measure &&
      measure.lines <= options.maxTrivialLines &&
      measure.depth <= options.maxTrivialDepth &&
      measure.maxConstant < options.trivialConstantBelow
    ) {
      trivial.add(call);
    }
  });
  if (trivial.size === 0) return { status: 'ok', draft, notes };
  const codes = [...trivial].map((call) => call.code);
  if (options.trivial === 'drop')
    return { status: 'drop', stage: 'rationality', reason: 'trivial-code', detail: codes };
  if (trivial.size === calls.length)
    return { status: 'drop', stage: 'rationality', reason: 'no-nontrivial-call', detail: codes };
  notes.push(...codes.map(() => 'trivial-call-to-text'));
  const next: Draft = draft.map((item) =>
    item.kind === 'call' && trivial.has(item) ? { kind: 'text', text: callAsText(item) } : item,
  );
  return { status: 'ok', draft: next, notes };
}

/** Runs the enabled steps of stage 2 (b)–(d) on a draft. */
export async function refineDraft(
  draft: Draft,
  context: RefineContext,
  depth = 0,
  notes: string[] = [],
): Promise<RefineResult> {
  const runs = context.executability || context.alignment || context.rationality !== null;
  if (runs) {
    await executeDraft(draft, context.sandbox, context.timeoutMs);
    const lost = draft.find((item): item is DraftCall => item.kind === 'call' && isOutage(item));
    if (lost) {
      return { status: 'drop', stage: 'executability', reason: 'sandbox-unavailable', detail: lost.outcome };
    }
  }
  if (context.executability) {
    const index = draft.findIndex(
      (item) =>
        item.kind === 'call' &&
        item.outcome !== null &&
        item.outcome.status !== 'ok' &&
        !failureExpected(item),
    );
    if (index >= 0) {
      const failed = draft[index] as DraftCall;
      failed.useReal = true;
      return {
        status: 'failed-call',
        prefix: draft.slice(0, index + 1),
        index,
        detail: { code: failed.code, output: realOutput(failed) },
      };
    }
  }
  if (context.alignment) {
    const aligned = await alignCalls(draft, context, notes, depth);
    if (aligned.status !== 'ok') return aligned;
    draft = aligned.draft;
  }
  if (context.rationality !== null) return rationalize(draft, context, context.rationality, notes);
  return { status: 'ok', draft, notes };
}
