/**
 * Paid answers survive a crash: every teacher answer is appended to a JSONL journal (and
 * flushed) before the pipeline uses it, keyed by a hash of the model, purpose and messages.
 * A resumed run looks the key up first and asks the teacher only for what it never answered.
 * A request that failed after every retry (an outage) is journaled too, as an `outage` line with
 * its cause: it is never looked up (a resumed run asks again) but it counts in the totals, so
 * the request count a summary shows is what the server received. Each line records its HTTP
 * attempts. A torn last line (kill -9 mid-write) is ignored on reading.
 */
import { createHash } from 'node:crypto';
import { appendFile, readFile } from 'node:fs/promises';
import type { Teacher, TeacherAnswer, TeacherRequest, TeacherResult } from './teacher.ts';

/** The journal key of a request: stable across runs for the same model and prompt. */
export function teacherRequestKey(model: string, request: TeacherRequest): string {
  const payload = JSON.stringify([
    model,
    request.purpose,
    request.messages,
    request.maxTokens,
    request.temperature,
  ]);
  return createHash('sha256').update(payload).digest('hex').slice(0, 32);
}

type JournalLine = { key: string; purpose: string; recordId: string; attempts?: number } & (
  | { answer: TeacherAnswer }
  | { outage: string }
);

/** What a journal holds: the answers by key, and the HTTP requests made and failed in all. */
export type TeacherJournalContents = {
  answers: Map<string, TeacherAnswer>;
  /** HTTP requests sent for the journaled lines (retries included). */
  attempts: number;
  /** Requests that ended in an outage. */
  outages: number;
};

/** Reads a journal; a missing file is empty, unparseable lines (a torn tail) are skipped. */
export async function readTeacherJournalContents(file: string): Promise<TeacherJournalContents> {
  const contents: TeacherJournalContents = { answers: new Map(), attempts: 0, outages: 0 };
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return contents;
    throw error;
  }
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let entry: JournalLine;
    try {
      entry = JSON.parse(line) as JournalLine;
    } catch {
      continue; // a line cut by a crash: that answer was never used
    }
    contents.attempts += entry.attempts ?? 1;
    if ('answer' in entry) contents.answers.set(entry.key, entry.answer);
    else contents.outages++;
  }
  return contents;
}

/** The journal's answers by key. */
export async function readTeacherJournal(file: string): Promise<Map<string, TeacherAnswer>> {
  return (await readTeacherJournalContents(file)).answers;
}

/** A teacher that answers from the journal when it can and journals every new answer first. */
export class JournaledTeacher implements Teacher {
  readonly #inner: Teacher;
  readonly #file: string;
  readonly #model: string;
  readonly #answers: Map<string, TeacherAnswer>;
  /** Requests that reached the inner teacher, and tokens they cost (this process only). */
  requests = 0;
  /** The last outage's cause per record id (this process only). */
  readonly outages = new Map<string, string>();
  promptTokens = 0;
  completionTokens = 0;
  #tail: Promise<void> = Promise.resolve();

  constructor(options: { inner: Teacher; file: string; model: string; answers: Map<string, TeacherAnswer> }) {
    this.#inner = options.inner;
    this.#file = options.file;
    this.#model = options.model;
    this.#answers = options.answers;
  }

  async complete(request: TeacherRequest, signal?: AbortSignal): Promise<TeacherResult> {
    const key = teacherRequestKey(this.#model, request);
    const known = this.#answers.get(key);
    if (known !== undefined) return { status: 'ok', answer: known, fromJournal: true };
    this.requests++;
    const result = await this.#inner.complete(request, signal);
    const head = {
      key,
      purpose: request.purpose,
      recordId: request.recordId,
      attempts: result.attempts ?? 1,
    };
    if (result.status !== 'ok') {
      // A stop asked for is not an outage; nothing reached the server after it.
      if (signal?.aborted) return result;
      this.outages.set(request.recordId, result.reason);
      await this.#write({ ...head, outage: result.reason });
      return result;
    }
    this.promptTokens += result.answer.promptTokens;
    this.completionTokens += result.answer.completionTokens;
    await this.#write({ ...head, answer: result.answer });
    this.#answers.set(key, result.answer);
    return result;
  }

  /** Appends are serialised so concurrent answers never interleave within a line. */
  async #write(line: JournalLine): Promise<void> {
    const write = this.#tail.then(() => appendFile(this.#file, `${JSON.stringify(line)}\n`));
    this.#tail = write.catch(() => {});
    await write;
  }
}
