/**
 * Paid answers survive a crash: every teacher answer is appended to a JSONL journal (and
 * flushed) before the pipeline uses it, keyed by a hash of the model, purpose and messages.
 * A resumed run looks the key up first and asks the teacher only for what it never answered.
 * A torn last line (kill -9 mid-write) is ignored on reading.
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

type JournalLine = { key: string; purpose: string; recordId: string; answer: TeacherAnswer };

/** Reads a journal; a missing file is empty, unparseable lines (a torn tail) are skipped. */
export async function readTeacherJournal(file: string): Promise<Map<string, TeacherAnswer>> {
  const answers = new Map<string, TeacherAnswer>();
  let text = '';
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return answers;
    throw error;
  }
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const entry = JSON.parse(line) as JournalLine;
      answers.set(entry.key, entry.answer);
    } catch {
      // a line cut by a crash: that answer was never used
    }
  }
  return answers;
}

/** A teacher that answers from the journal when it can and journals every new answer first. */
export class JournaledTeacher implements Teacher {
  readonly #inner: Teacher;
  readonly #file: string;
  readonly #model: string;
  readonly #answers: Map<string, TeacherAnswer>;
  /** Requests that reached the inner teacher, and tokens they cost (this process only). */
  requests = 0;
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
    if (result.status !== 'ok') return result;
    this.promptTokens += result.answer.promptTokens;
    this.completionTokens += result.answer.completionTokens;
    const line: JournalLine = {
      key,
      purpose: request.purpose,
      recordId: request.recordId,
      answer: result.answer,
    };
    // Appends are serialised so concurrent answers never interleave within a line.
    const write = this.#tail.then(() => appendFile(this.#file, `${JSON.stringify(line)}\n`));
    this.#tail = write.catch(() => {});
    await write;
    this.#answers.set(key, result.answer);
    return result;
  }
}
