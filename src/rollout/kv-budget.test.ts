import { describe, expect, it } from 'vitest';
import { KvBudget } from './kv-budget.ts';

describe('KvBudget', () => {
  it('admits while the weights fit, then in arrival order as tokens are released', async () => {
    const budget = new KvBudget(100);
    const first = await budget.acquire(60);
    const order: string[] = [];
    const big = budget.acquire(50).then((hold) => {
      order.push('big');
      return hold;
    });
    const small = budget.acquire(10).then((hold) => {
      order.push('small');
      return hold;
    });
    await Promise.resolve();
    // 60 + 50 > 100: the big one waits, and the small one behind it does not overtake it.
    expect(order).toEqual([]);
    expect(budget.waiting).toBe(2);
    first.release();
    const bigHold = await big;
    const smallHold = await small;
    expect(order).toEqual(['big', 'small']);
    expect(budget.held).toBe(60);
    bigHold.release();
    smallHold.release();
    smallHold.release();
    expect(budget.held).toBe(0);
  });

  it('follows a holder as its context grows and shrinks', async () => {
    const budget = new KvBudget(100);
    const growing = await budget.acquire(70);
    let admitted = false;
    const next = budget.acquire(40).then((hold) => {
      admitted = true;
      return hold;
    });
    await Promise.resolve();
    expect(budget.held).toBe(70); // 70 + 40 > 100: the newcomer waits
    expect(admitted).toBe(false);
    growing.resize(120); // past the budget: allowed, a running trajectory is not stopped
    await Promise.resolve();
    expect(budget.held).toBe(120);
    expect(admitted).toBe(false);
    growing.resize(50); // 50 + 40 fits now
    const hold = await next;
    expect(admitted).toBe(true);
    expect(budget.held).toBe(90);
    growing.release();
    growing.resize(500); // after release: ignored
    hold.release();
    expect(budget.held).toBe(0);
  });

  it('admits one trajectory heavier than the whole budget when nothing else is held', async () => {
    const budget = new KvBudget(100);
    const small = await budget.acquire(10);
    let admitted = false;
    const huge = budget.acquire(500).then((hold) => {
      admitted = true;
      return hold;
    });
    await Promise.resolve();
    expect(admitted).toBe(false);
    small.release();
    (await huge).release();
    expect(admitted).toBe(true);
    expect(() => new KvBudget(0)).toThrow(/positive/);
  });
});
