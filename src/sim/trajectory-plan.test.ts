import { describe, expect, it } from 'vitest';
import { createSeededRandom, randomInteger } from '../tasks/seeded-random.ts';
import { responseLayout, responseSlice, responseUntilStop, type TrajectoryPlan } from './trajectory-plan.ts';

/** The response cut at its first-ending stop, searched in the whole slice (what the policy did first). */
function sliceThenStop(
  layout: ReturnType<typeof responseLayout>,
  from: number,
  to: number,
  stops: readonly string[],
) {
  const text = responseSlice(layout, from, to);
  let matchedStop: string | null = null;
  let stopAt = text.length;
  for (const stop of stops) {
    const index = stop === '' ? -1 : text.indexOf(stop);
    if (index >= 0 && index + stop.length <= stopAt) {
      stopAt = index + stop.length;
      matchedStop = stop;
    }
  }
  return { text: text.slice(0, stopAt), matchedStop };
}

// Stops that end code blocks, span pieces, sit inside filler, overlap each other, or never occur.
const STOP_CHOICES = ['</code>', '</think>', 'x\n<', 'xx', '\n', '}', '', 'code>', '</code>\nx', 'never'];

describe('responseUntilStop', () => {
  it('returns what slicing the whole range and searching it returns, on random plans and stops', () => {
    const random = createSeededRandom('response until stop');
    for (let trial = 0; trial < 2000; trial++) {
      const calls = randomInteger(random, 0, 4);
      const ats = Array.from({ length: calls }, () => random()).sort((a, b) => a - b);
      const plan: TrajectoryPlan = {
        responseTokens: randomInteger(random, 0, 400),
        toolCalls: ats.map((at) => ({ at, outputTokens: randomInteger(random, 0, 99) })),
        answer: String(randomInteger(random, 0, 99)),
      };
      const layout = responseLayout(plan);
      const from = randomInteger(random, 0, layout.length);
      const to = Math.min(layout.length, from + randomInteger(random, 0, layout.length + 5));
      const stops = Array.from(
        { length: randomInteger(random, 0, 3) },
        () => STOP_CHOICES[randomInteger(random, 0, STOP_CHOICES.length - 1)] as string,
      );
      expect(responseUntilStop(layout, from, to, stops), `trial ${trial}`).toEqual(
        sliceThenStop(layout, from, to, stops),
      );
    }
  });
});
