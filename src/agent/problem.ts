/** A problem as the agent loop sees it. */
export type Problem = { id: string; text: string };
