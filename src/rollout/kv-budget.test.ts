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

  it('admits waiters by priority, read again after reorder(), arrival order among equals', async () => {
    const budget = new KvBudget(10);
    const first = await budget.acquire(10);
    const order: string[] = [];
    const rank: Record<string, number> = { a: 1, b: 1, c: 0 };
    const wait = (name: string) =>
      budget.acquire(10, { priority: () => [rank[name] ?? 0] }).then((hold) => {
        order.push(name);
        return hold;
      });
    const a = wait('a');
    const b = wait('b');
    const c = wait('c');
    first.release();
    const cHold = await c; // rank 0 first, though it came last
    rank.a = 2; // a's verdict changed while it waited
    budget.reorder();
    cHold.release();
    (await b).release();
    (await a).release();
    expect(order).toEqual(['c', 'b', 'a']);
    expect(budget.held).toBe(0);
  });

  it('a waiter whose signal fires leaves the queue with a hold of nothing', async () => {
    const budget = new KvBudget(10);
    const first = await budget.acquire(8);
    const leave = new AbortController();
    const leaving = budget.acquire(5, { signal: leave.signal });
    let behindAdmitted = false;
    const behind = budget.acquire(2).then((hold) => {
      behindAdmitted = true;
      return hold;
    });
    await Promise.resolve();
    // FIFO: the 2-token waiter fits but waits behind the 5-token one.
    expect(behindAdmitted).toBe(false);
    leave.abort();
    const empty = await leaving;
    const hold = await behind;
    expect(behindAdmitted).toBe(true);
    expect(budget.waiting).toBe(0);
    expect(budget.held).toBe(10);
    empty.release();
    expect(budget.held).toBe(10);
    hold.release();
    first.release();
    expect(budget.held).toBe(0);
    expect(await budget.acquire(1, { signal: leave.signal })).toBeDefined();
    expect(budget.held).toBe(0); // already aborted: nothing taken
  });
});
