/**
 * The teacher contract: one chat completion, with the tokens it cost. Implementations: the
 * OpenAI-compatible HTTP client (`openai-teacher.ts`), wrapped by the journal that makes paid
 * answers survive a crash (`teacher-journal.ts`).
 */

export type TeacherMessage = { role: 'system' | 'user' | 'assistant'; content: string };

/** What the pipeline asks for; part of the journal key, and what a programmatic teacher reads. */
export type TeacherPurpose = 'rewrite' | 'judge' | 'self-correct';

export type TeacherRequest = {
  purpose: TeacherPurpose;
  /** The input record the request is about (for logs and the journal). */
  recordId: string;
  messages: TeacherMessage[];
  maxTokens: number;
  temperature: number;
};

export type TeacherAnswer = { text: string; promptTokens: number; completionTokens: number };

/**
 * A teacher answer, or why there is none (an outage after every retry): recorded, never fatal.
 * `attempts`: the HTTP requests this took (retries included; 1 when absent, 0 from the journal).
 */
export type TeacherResult =
  | { status: 'ok'; answer: TeacherAnswer; fromJournal: boolean; attempts?: number }
  | { status: 'unavailable'; reason: string; attempts?: number };

export interface Teacher {
  complete(request: TeacherRequest, signal?: AbortSignal): Promise<TeacherResult>;
}
