/**
 * What the fast path asks the sandboxed SymPy check, and what it answers. Expressions are
 * SymPy strings produced by `toSympy` (never model text); symbols are their plain names.
 */

export type SymbolicQuery =
  | { kind: 'expression'; left: string; right: string; symbols: string[] }
  /** Two equations `l = r`: equal when l₁ − r₁ is a nonzero constant multiple of l₂ − r₂. */
  | { kind: 'equation'; left: [string, string]; right: [string, string]; symbols: string[] };

export type SymbolicVerdict =
  | { outcome: 'equal'; method: 'symbolic' | 'numeric' }
  | { outcome: 'different' }
  /** Neither proved nor refuted. */
  | { outcome: 'unknown' }
  | { outcome: 'timeout' }
  | { outcome: 'error'; message: string }
  /** The check could not run: no session could be opened, or the session died twice. */
  | { outcome: 'unavailable'; cause: string };
