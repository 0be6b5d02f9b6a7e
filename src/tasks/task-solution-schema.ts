/** The zod schema of a `TaskSolution` record, for reading dataset files back. */
import { z } from 'zod';
import type { TaskSolution } from './types.ts';

export const taskProblemSchema = z
  .object({
    id: z.string().min(1),
    family: z.string().min(1),
    level: z.number().int().nonnegative(),
    problem: z.string(),
    answer: z.string(),
  })
  .strict();

export const taskSolutionSchema: z.ZodType<TaskSolution> = z
  .object({
    problem: taskProblemSchema,
    style: z.enum(['tool', 'text']),
    segments: z.array(z.object({ kind: z.enum(['model', 'tool']), text: z.string() }).strict()).min(1),
  })
  .strict();
