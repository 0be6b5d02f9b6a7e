/**
 * One prompt path for a chat model (SmolLM2-135M-Instruct, as `model pull` imports it): the
 * prompt ids our TypeScript side builds (prompt builder → `renderPrompt` through the model's own
 * chat template with @huggingface/jinja → our tokenizer) equal transformers'
 * `apply_chat_template(..., tokenize=True, add_generation_prompt=True)` on the same messages,
 * for every prompt builder and both dialects; and the trainer's SFT example
 * (`buildSftExample`, what `train sft --model` trains on) starts with exactly the prompt ids the
 * agent loop sends the engine (what `eval`, `solve` and `train rl` generate from), per dialect.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { promptBuilders, renderPrompt, runAgent } from '../src/agent/index.ts';
import type { ChatMessage, Tokenizer } from '../src/engine/index.ts';
import { loadTokenizer } from '../src/engine/load-tokenizer.ts';
import { resolveDataDir } from '../src/eval/benchmark-data-dir.ts';
import { loadBenchmark } from '../src/eval/index.ts';
import { getDialect } from '../src/protocol/index.ts';
import { trainerPython } from '../src/shared/python-environments.ts';
import { arithEvalProblems } from '../src/tasks/index.ts';
import type { TaskSolution } from '../src/tasks/types.ts';
import { buildSftExample } from '../src/train/sft-example.ts';
import { functionSandbox, ScriptedEngine } from './agent-fixtures.ts';
import { smollm2Available, smollm2Folder } from './smollm2-folder.ts';

const available = await smollm2Available();
let folder: string;
let release = async () => {};
let tokenizer: Tokenizer;

beforeAll(async () => {
  if (!available) return;
  const model = await smollm2Folder();
  if (model === null) throw new Error('SmolLM2 became unavailable');
  folder = model.folder;
  release = model.release;
  tokenizer = await loadTokenizer(folder);
}, 900_000);

afterAll(async () => {
  await release();
});

/** transformers' prompt ids for each message list, from one Python process. */
function transformersPromptIds(model: string, conversations: ChatMessage[][]): number[][] {
  const program = [
    'import json, sys, transformers',
    'tokenizer = transformers.AutoTokenizer.from_pretrained(sys.argv[1])',
    'conversations = json.load(sys.stdin)',
    'json.dump([tokenizer.apply_chat_template(m, tokenize=True, add_generation_prompt=True, return_dict=False)',
    '           for m in conversations], sys.stdout)',
  ].join('\n');
  const stdout = execFileSync(trainerPython(), ['-c', program, model], {
    input: JSON.stringify(conversations),
    env: { ...process.env, HF_HUB_OFFLINE: '1', TRANSFORMERS_VERBOSITY: 'error' },
    maxBuffer: 64 * 1024 * 1024,
  });
  return JSON.parse(stdout.toString()) as number[][];
}

async function problems(): Promise<Array<{ id: string; text: string }>> {
  const arith = arithEvalProblems({ count: 12 }).map((problem) => ({
    id: problem.id,
    text: problem.problem,
  }));
  const dataDir = resolveDataDir();
  if (dataDir === null) return arith;
  const math = (await loadBenchmark('math500', { dataDir })).problems.slice(0, 12);
  return [...arith, ...math.map((problem) => ({ id: problem.id, text: problem.problem }))];
}

describe.skipIf(!available)('SmolLM2-135M-Instruct prompts', () => {
  it('our prompt ids equal transformers’ apply_chat_template, every builder and dialect', async () => {
    const cases: Array<{ name: string; messages: ChatMessage[] }> = [];
    for (const problem of await problems()) {
      for (const dialectName of ['tags', 'markdown'] as const) {
        for (const [builder, build] of Object.entries(promptBuilders)) {
          cases.push({
            name: `${builder}/${dialectName}/${problem.id}`,
            messages: build(problem, getDialect(dialectName)),
          });
        }
      }
    }
    const reference = transformersPromptIds(
      folder,
      cases.map((entry) => entry.messages),
    );
    const mismatches = cases.filter(
      (entry, index) =>
        JSON.stringify(tokenizer.encode(renderPrompt(entry.messages, tokenizer))) !==
        JSON.stringify(reference[index]),
    );
    expect(mismatches.map((entry) => entry.name)).toEqual([]);
    // The instructions reach the model as its system message (this template has one).
    const instructed = renderPrompt(
      promptBuilders.instructed({ id: 'x', text: 'Q' }, getDialect('markdown')),
      tokenizer,
    );
    expect(instructed).toMatch(/^<\|im_start\|>system\nSolve the math problem step by step\. Whenever/);
    expect(instructed).not.toContain('named SmolLM');
  }, 300_000);

  it.each(['tags', 'markdown'] as const)(
    'train sft --model trains on the prompt ids the agent loop sends the engine (%s)',
    async (dialectName) => {
      const dialect = getDialect(dialectName);
      const problem = {
        id: 'arith-1',
        family: 'arith',
        level: 1,
        problem: 'Compute 17 * 23.',
        answer: '391',
      };
      const code =
        dialectName === 'tags'
          ? '<think>Multiply. <code>\nprint(17 * 23)\n</code>'
          : 'Multiply.\n```python\nprint(17 * 23)\n```\n';
      const outcome = { status: 'ok', stdout: '391\n', stderr: '', ms: 1 } as const;
      const closed = dialect.closedCodeAtEnd(
        code,
        dialect.stopStrings.find((stop) => code.endsWith(stop)) ?? null,
      )!;
      const solution: TaskSolution = {
        problem,
        style: 'tool',
        segments: [
          { kind: 'model', text: code },
          { kind: 'tool', text: dialect.renderToolResult(outcome, closed) },
          { kind: 'model', text: 'The answer is \\boxed{391}.' },
        ],
      };
      const example = buildSftExample(solution, tokenizer, dialect, promptBuilders.instructed);
      const trainedPrompt = example.inputIds.slice(0, example.lossMask.indexOf(1));

      const engine = new ScriptedEngine({ model: { parts: ['The answer is \\boxed{391}.'] }, tokenizer });
      await runAgent(
        { id: problem.id, text: problem.problem },
        {
          engine,
          tokenizer,
          sandbox: functionSandbox(() => outcome),
          dialect,
          prompt: promptBuilders.instructed,
        },
      );
      expect(engine.requests[0]!.promptTokenIds).toEqual(trainedPrompt);
      expect(tokenizer.decode(trainedPrompt)).toContain(dialectName === 'tags' ? '<think>' : '```python');
    },
  );
});
