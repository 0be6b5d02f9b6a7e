import { describe, expect, it } from 'vitest';
import { KvBudget } from './kv-budget.ts';

describe('KvBudget', () => {
  it('admits while the weights fit, then in arrival order as tokens are released', async () => {
    const budget = new KvBudget(100);
    const first = await budget.acquire(60);
    const order: string[] = [];
    const big = budget.acquire(50).then((release) => {
      order.push('big');
      return release;
    });
    const small = budget.acquire(10).then((release) => {
      order.push('small');
      return release;
    });
    await Promise.resolve();
    // 60 + 50 > 100: the big one waits, and the small one behind it does not overtake it.
    expect(order).toEqual([]);
    expect(budget.waiting).toBe(2);
    first();
    const releaseBig = await big;
    const releaseSmall = await small;
    expect(order).toEqual(['big', 'small']);
    expect(budget.held).toBe(60);
    releaseBig();
    releaseSmall();
    releaseSmall();
    expect(budget.held).toBe(0);
  });

  it('admits one trajectory heavier than the whole budget when nothing else is held', async () => {
    const budget = new KvBudget(100);
    const small = await budget.acquire(10);
    let admitted = false;
    const huge = budget.acquire(500).then((release) => {
      admitted = true;
      return release;
    });
    await Promise.resolve();
    expect(admitted).toBe(false);
    small();
    (await huge)();
    expect(admitted).toBe(true);
    expect(() => new KvBudget(0)).toThrow(/positive/);
  });
});
