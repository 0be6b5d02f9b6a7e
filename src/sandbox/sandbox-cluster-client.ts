/**
 * A `SandboxProvider` over many sandbox nodes. A session stays on the node that opened it;
 * a new session goes to the least-loaded healthy node (sessions / capacity from the last
 * health check, plus sessions this client opened since). A node that fails a request or a
 * health check is marked down: an in-flight call reports `killed` with reason `node-lost` (it
 * may have run), a later call `session-lost` (it was not sent: a caller that keeps the cells,
 * like the agent's `TrajectorySession`, replays them on another node and runs the call there);
 * either way the session then continues, fresh, on another node; new sessions avoid it until
 * a health check succeeds again. Opening a session falls over to the next node when one is
 * unreachable or full.
 */
import { type RemoteBinding, RemoteSandboxSession } from './remote-sandbox-session.ts';
import { SandboxClient, type SandboxNodeHealth } from './sandbox-client.ts';
import { SandboxPoolFullError, SandboxUnavailableError } from './sandbox-errors.ts';
import type { SandboxProvider } from './types.ts';

export type SandboxClusterOptions = {
  nodes: string[];
  token?: string;
  /** How often every node's health is checked. */
  healthIntervalMs?: number;
  healthTimeoutMs?: number;
  requestTimeoutMs?: number;
  log?: (line: string) => void;
};

type NodeState = {
  client: SandboxClient;
  healthy: boolean;
  health: SandboxNodeHealth | null;
  /** Sessions this client opened on the node since its last health report. */
  openedSinceHealth: number;
};

/** Node status as the cluster client sees it. */
export type SandboxClusterNodeStatus = { url: string; healthy: boolean; sessions: number | null };

export class SandboxClusterClient implements SandboxProvider {
  readonly #nodes: NodeState[];
  readonly #timer: NodeJS.Timeout;
  readonly #healthTimeoutMs: number;
  readonly #log: (line: string) => void;

  constructor(options: SandboxClusterOptions) {
    if (options.nodes.length === 0) throw new SandboxUnavailableError('cluster', 'no nodes given');
    this.#log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.#healthTimeoutMs = options.healthTimeoutMs ?? 2_000;
    this.#nodes = options.nodes.map((url) => {
      const state: NodeState = {
        client: undefined as never,
        healthy: true,
        health: null,
        openedSinceHealth: 0,
      };
      state.client = new SandboxClient({
        url,
        ...(options.token === undefined ? {} : { token: options.token }),
        ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
        onUnavailable: (error) => this.#markDown(state, error.message),
      });
      return state;
    });
    this.#timer = setInterval(() => void this.checkHealth(), options.healthIntervalMs ?? 2_000);
    this.#timer.unref();
  }

  /** Checks every node now; resolves when all answered or timed out. */
  async checkHealth(): Promise<void> {
    await Promise.all(
      this.#nodes.map(async (node) => {
        try {
          node.health = await node.client.health(this.#healthTimeoutMs);
          node.openedSinceHealth = 0;
          if (!node.healthy) this.#log(`sandbox cluster: ${node.client.url} is back`);
          node.healthy = true;
        } catch (error) {
          this.#markDown(node, error instanceof Error ? error.message : String(error));
        }
      }),
    );
  }

  /** Each node's view: healthy or down, sessions at the last health check. */
  status(): SandboxClusterNodeStatus[] {
    return this.#nodes.map((node) => ({
      url: node.client.url,
      healthy: node.healthy,
      sessions: node.health?.sessions ?? null,
    }));
  }

  async openSession(): Promise<RemoteSandboxSession> {
    const binding = await this.#bind();
    return new RemoteSandboxSession(binding.id, binding, { open: () => this.#bind() });
  }

  async #bind(): Promise<RemoteBinding & { id: string }> {
    const failures: string[] = [];
    let allFull = true;
    for (const node of this.#ranked()) {
      node.openedSinceHealth += 1; // reserved before the await so concurrent opens spread out
      try {
        const binding = await node.client.bind();
        return {
          ...binding,
          execute: async (code, options) => {
            // Known down before the call: nothing is sent, nothing runs (`codeDidNotRun`).
            if (!node.healthy) {
              return {
                status: 'killed',
                reason: `session-lost: ${node.client.url} is down (the call was not sent)`,
              };
            }
            return binding.execute(code, options);
          },
        };
      } catch (error) {
        node.openedSinceHealth = Math.max(0, node.openedSinceHealth - 1);
        if (!(error instanceof SandboxPoolFullError)) allFull = false;
        failures.push(`${node.client.url}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    if (failures.length > 0 && allFull)
      throw new SandboxPoolFullError(`every node is full (${failures.join('; ')})`);
    throw new SandboxUnavailableError(
      'cluster',
      `no node could open a session (${failures.join('; ') || 'all down'})`,
    );
  }

  /** Healthy nodes by load (least first), then down nodes as a last resort. */
  #ranked(): NodeState[] {
    const load = (node: NodeState) => {
      const capacity = node.health?.maxSessions ?? 1;
      return ((node.health?.sessions ?? 0) + node.openedSinceHealth) / Math.max(1, capacity);
    };
    const healthy = this.#nodes.filter((node) => node.healthy).sort((a, b) => load(a) - load(b));
    return [...healthy, ...this.#nodes.filter((node) => !node.healthy)];
  }

  #markDown(node: NodeState, reason: string): void {
    if (node.healthy) this.#log(`sandbox cluster: ${node.client.url} marked down: ${reason}`);
    node.healthy = false;
  }

  async close(): Promise<void> {
    clearInterval(this.#timer);
    await Promise.all(this.#nodes.map((node) => node.client.close()));
  }
}
