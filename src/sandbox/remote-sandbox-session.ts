/**
 * A session served by a remote node, shared by the single-node client and the cluster client.
 * It holds a remote session id on some node; when the node forgets it (404: expired or
 * restarted) or cannot be reached, the call reports `killed` (reason `session-lost` or
 * `node-lost`) and the next call opens a fresh remote session, possibly on another node.
 * Execute requests are never retried: the code may already have run.
 */
import { SandboxSessionClosedError } from './sandbox-errors.ts';
import type { ExecuteOptions, ExecutionOutcome, SandboxSession } from './types.ts';

/** What a remote session needs from whoever placed it on a node. */
export type RemoteBinding = {
  /** Label of the node, for messages. */
  node: string;
  execute(code: string, options: ExecuteOptions): Promise<ExecutionOutcome>;
  delete(): Promise<void>;
};

export type RemoteSessionHooks = {
  /** Opens a remote session (on the best node) and binds to it. */
  open(): Promise<RemoteBinding>;
};

export class RemoteSandboxSession implements SandboxSession {
  readonly id: string;
  readonly #hooks: RemoteSessionHooks;
  #binding: RemoteBinding | null;
  #closed = false;
  #chain: Promise<unknown> = Promise.resolve();

  constructor(id: string, binding: RemoteBinding, hooks: RemoteSessionHooks) {
    this.id = id;
    this.#binding = binding;
    this.#hooks = hooks;
  }

  /** The node this session is on now (null between a loss and the next call). */
  get node(): string | null {
    return this.#binding?.node ?? null;
  }

  execute(code: string, options: ExecuteOptions = {}): Promise<ExecutionOutcome> {
    const run = this.#chain.then(() => this.#run(code, options));
    this.#chain = run.catch(() => {});
    return run;
  }

  async #run(code: string, options: ExecuteOptions): Promise<ExecutionOutcome> {
    if (this.#closed) throw new SandboxSessionClosedError(this.id);
    if (!this.#binding) this.#binding = await this.#hooks.open();
    const binding = this.#binding;
    const outcome = await binding.execute(code, options);
    if (outcome.status === 'killed' && /^(node-lost|session-lost)/.test(outcome.reason)) this.#binding = null;
    return outcome;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const binding = this.#binding;
    this.#binding = null;
    await binding?.delete().catch(() => {});
  }
}
