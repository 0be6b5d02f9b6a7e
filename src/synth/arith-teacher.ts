/**
 * A programmatic teacher for the arith family, served as a real OpenAI chat completions server
 * in process (`startArithTeacherServer`), so the offline demo and the ablation exercise the
 * same HTTP client, journal and pipeline as a real teacher. It recognises the problem in the
 * prompt, writes the tool solution from the family's own plan (`arithToolPlan`), and adds
 * realistic noise at configured rates, chosen per problem from a hash (deterministic):
 *
 * - format slip: markdown fences instead of tags (repairable) or a stray closer (not);
 * - failing code: a misspelt name, with the right output imagined anyway;
 * - made-up output: a wrong interpreter output, and the answer follows it;
 * - needless code: an extra block like `print(2 + 3)` before the real one;
 * - wrong step: the code is right but the final step and answer are off by one.
 *
 * Self-correction requests get the fixed code and the right conclusion; judge requests get
 * HOLDS; continuation requests get the conclusion from the real output.
 */
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ArithProblem } from '../tasks/arith/arith-spec.ts';
import { arithToolPlan } from '../tasks/arith/arith-tool-plan.ts';

export type ArithNoise = {
  formatSlip: number;
  failingCode: number;
  madeUpOutput: number;
  needlessCode: number;
  wrongStep: number;
};

export const DEFAULT_ARITH_NOISE: ArithNoise = {
  formatSlip: 0.15,
  failingCode: 0.15,
  madeUpOutput: 0.15,
  needlessCode: 0.15,
  wrongStep: 0.1,
};

/** A number in [0, 1) from a hash of the text: the noise draw for one problem. */
function unit(text: string): number {
  return createHash('sha256').update(text).digest().readUInt32BE(0) / 2 ** 32;
}

function bumped(answer: string): string {
  const slash = answer.indexOf('/');
  if (slash >= 0) return `${BigInt(answer.slice(0, slash)) + 1n}${answer.slice(slash)}`;
  return String(BigInt(answer) + 1n);
}

/** Which noise a problem gets (at most one kind), by its draw against cumulative rates. */
export function arithNoiseOf(problem: ArithProblem, noise: ArithNoise): keyof ArithNoise | null {
  let draw = unit(`noise:${problem.id}`);
  for (const kind of Object.keys(noise) as (keyof ArithNoise)[]) {
    if (draw < noise[kind]) return kind;
    draw -= noise[kind];
  }
  return null;
}

/** The teacher's rewrite of one problem, noise included. */
export function arithRewrite(problem: ArithProblem, noise: ArithNoise): string {
  const plan = arithToolPlan(problem.spec);
  const answer = problem.answer;
  const block = (code: string, output: string) =>
    `<code>\n${code}\n</code>\n<interpreter>\n${output}\n</interpreter>\n`;
  switch (arithNoiseOf(problem, noise)) {
    case 'formatSlip':
      if (unit(`slip:${problem.id}`) < 0.5) {
        return `<think>${plan.lead}\n\`\`\`python\n${plan.code}\n\`\`\`\n\`\`\`output\n${answer}\n\`\`\`\n${plan.conclusion}</think>\nThe answer is \\boxed{${answer}}.`;
      }
      return `<think>${plan.lead} </code> <code>\n${plan.code}\n</code>\n<interpreter>\n${answer}\n</interpreter>\n${plan.conclusion}</think>\nThe answer is \\boxed{${answer}}.`;
    case 'failingCode':
      return `<think>${plan.lead} ${block(plan.code.replace(/print\(/, 'pritn('), answer)}${plan.conclusion}</think>\nThe answer is \\boxed{${answer}}.`;
    case 'madeUpOutput': {
      const wrong = bumped(answer);
      return `<think>${plan.lead} ${block(plan.code, wrong)}${plan.conclusion}</think>\nThe answer is \\boxed{${wrong}}.`;
    }
    case 'needlessCode':
      return `<think>First a warm-up: ${block('print(2 + 3)', '5')}${plan.lead} ${block(plan.code, answer)}${plan.conclusion}</think>\nThe answer is \\boxed{${answer}}.`;
    case 'wrongStep': {
      const wrong = bumped(answer);
      return `<think>${plan.lead} ${block(plan.code, answer)}${plan.conclusion} Adjusting by one gives ${wrong}.</think>\nThe answer is \\boxed{${wrong}}.`;
    }
    default:
      return `<think>${plan.lead} ${block(plan.code, answer)}${plan.conclusion}</think>\nThe answer is \\boxed{${answer}}.`;
  }
}

/** What the teacher answers to one prompt; null when it names no known problem. */
export function arithTeacherReply(
  content: string,
  problems: ReadonlyMap<string, ArithProblem>,
  noise: ArithNoise,
): string | null {
  if (/HOLDS or BROKEN/.test(content)) return 'HOLDS';
  const problem = [...problems.values()].find((candidate) => content.includes(candidate.problem));
  if (problem === undefined) return null;
  const plan = arithToolPlan(problem.spec);
  if (/block failed/.test(content)) {
    return `The code used a misspelt name, so it failed. Fix it and run it again. <code>\n${plan.code}\n</code>\n<interpreter>\n${problem.answer}\n</interpreter>\n${plan.conclusion}</think>\nThe answer is \\boxed{${problem.answer}}.`;
  }
  if (/printed the one shown at the end/.test(content)) {
    return `${plan.conclusion}</think>\nThe answer is \\boxed{${problem.answer}}.`;
  }
  return arithRewrite(problem, noise);
}

export type ArithTeacherServer = { url: string; requests: () => number; close: () => Promise<void> };

/** Serves the arith teacher at `http://127.0.0.1:PORT/v1/chat/completions`. */
export async function startArithTeacherServer(options: {
  problems: readonly ArithProblem[];
  noise?: ArithNoise;
}): Promise<ArithTeacherServer> {
  const noise = options.noise ?? DEFAULT_ARITH_NOISE;
  const byId = new Map(options.problems.map((problem) => [problem.id, problem]));
  let requests = 0;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      requests++;
      let body: { model?: string; messages?: { content?: string }[] };
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'body is not JSON' } }));
        return;
      }
      const content = body.messages?.map((message) => message.content ?? '').join('\n') ?? '';
      const reply = request.url === '/v1/chat/completions' ? arithTeacherReply(content, byId, noise) : null;
      if (reply === null) {
        response
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ error: { message: 'no known arith problem in the prompt' } }));
        return;
      }
      const promptTokens = Buffer.byteLength(content);
      const completionTokens = Buffer.byteLength(reply);
      response.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          id: `chatcmpl-${requests}`,
          object: 'chat.completion',
          model: body.model ?? 'arith-teacher',
          choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
          usage: {
            prompt_tokens: promptTokens,
            completion_tokens: completionTokens,
            total_tokens: promptTokens + completionTokens,
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
