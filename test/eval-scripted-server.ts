/**
 * A scripted OpenAI-compatible completions server for the evaluation tests: a real node:http
 * server answering `POST /v1/completions` in vLLM's response format (the stop string trimmed
 * from `text` and named in `stop_reason`). The reply is chosen by the problem named in the
 * prompt, the sample (found from the request's `seed`: `eval --seed 0` seeds sample s's turn t
 * with the agent's `callSeed(s, t)`) and the
 * turn (how many interpreter results follow the problem statement in the prompt).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { callSeed } from '../src/agent/run-agent.ts';

/** One engine reply: code (ends at the `</code>` stop), or a final text (EOS). */
export type ScriptedTurn = { code: string; before?: string } | { final: string };

/** script[problemKey][sample] = the turns of that trajectory. */
export type Script = Record<string, ScriptedTurn[][]>;

export type ScriptedServer = {
  url: string;
  requests: () => number;
  close: () => Promise<void>;
};

/** Starts the server; `problemKey(prompt)` finds which problem a prompt is about. */
export async function startScriptedServer({
  script,
  problemKey,
  delayMs = 0,
}: {
  script: Script;
  problemKey: (prompt: string) => string | undefined;
  delayMs?: number;
}): Promise<ScriptedServer> {
  let count = 0;
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', () => {
      count++;
      const reply = (status: number, payload: unknown) => {
        const send = () => {
          response.writeHead(status, { 'content-type': 'application/json' });
          response.end(JSON.stringify(payload));
        };
        if (delayMs > 0) setTimeout(send, delayMs);
        else send();
      };
      if (request.method !== 'POST' || request.url !== '/v1/completions') {
        reply(404, { object: 'error', message: `no route ${request.url}`, type: 'NotFoundError', code: 404 });
        return;
      }
      const parsed = JSON.parse(body) as { prompt: string; seed?: number; model: string; stop?: string[] };
      const key = problemKey(parsed.prompt);
      // Count only results after the problem: the instructions before it mention the tags too.
      const afterProblem =
        key === undefined ? '' : parsed.prompt.slice(parsed.prompt.indexOf(`Problem ${key}`));
      const turnIndex = (afterProblem.match(/<\/interpreter>/g) ?? []).length;
      // The agent seeds turn t of sample s with callSeed(s, t): find the sample that matches.
      const samples = key === undefined ? [] : (script[key] ?? []);
      const sample = samples.findIndex((_, index) => callSeed(index, turnIndex) === (parsed.seed ?? 0));
      const turns = sample === -1 ? undefined : samples[sample];
      const turn = turns?.[turnIndex];
      if (turn === undefined) {
        reply(400, {
          object: 'error',
          message: 'no scripted reply for this prompt',
          type: 'BadRequestError',
          code: 400,
        });
        return;
      }
      const text = 'code' in turn ? `${turn.before ?? ''}<code>\n${turn.code}\n` : turn.final;
      reply(200, {
        id: `cmpl-${count}`,
        object: 'text_completion',
        created: 1_700_000_000,
        model: parsed.model,
        choices: [
          {
            index: 0,
            text,
            logprobs: null,
            finish_reason: 'stop',
            stop_reason: 'code' in turn ? '</code>' : null,
          },
        ],
        usage: { prompt_tokens: parsed.prompt.length, completion_tokens: text.length, total_tokens: 0 },
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
