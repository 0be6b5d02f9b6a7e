import { describe, expect, it } from 'vitest';
import { ConcurrencyLimiter, LimiterAbortedError } from './concurrency-limiter.ts';

describe('ConcurrencyLimiter', () => {
  it('holds waiters until a slot is released, in arrival order', async () => {
    const limiter = new ConcurrencyLimiter(1);
    const release = await limiter.acquire();
    const order: number[] = [];
    const second = limiter.acquire().then((next) => {
      order.push(2);
      return next;
    });
    const third = limiter.acquire().then((next) => {
      order.push(3);
      next();
    });
    expect(limiter.waiting).toBe(2);
    release();
    (await second)();
    await third;
    expect(order).toEqual([2, 3]);
    expect(limiter.active).toBe(0);
  });

  it('drops an aborted waiter from the queue', async () => {
    const limiter = new ConcurrencyLimiter(1);
    const release = await limiter.acquire();
    const controller = new AbortController();
    const waiting = limiter.acquire(controller.signal);
    controller.abort();
    await expect(waiting).rejects.toBeInstanceOf(LimiterAbortedError);
    expect(limiter.waiting).toBe(0);
    release();
    expect(limiter.active).toBe(0);
  });
});
