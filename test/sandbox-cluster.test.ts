import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SandboxClusterClient } from '../src/sandbox/index.ts';
import { describeSandboxContract } from './sandbox-contract.ts';
import { type NodeProcess, startNodeProcess } from './sandbox-node-process.ts';
import { processesOf } from './sandbox-processes.ts';

const nodeArgs = ['--workers', '3', '--warm', '1', '--preload', '', '--memory-mb', '512'];

async function startCluster(count: number) {
  const nodes = await Promise.all(Array.from({ length: count }, () => startNodeProcess(nodeArgs)));
  const cluster = new SandboxClusterClient({
    nodes: nodes.map((node) => node.url),
    healthIntervalMs: 200,
    healthTimeoutMs: 500,
    log: () => {},
  });
  await cluster.checkHealth();
  return { nodes, cluster };
}

describeSandboxContract('three-node cluster', async () => {
  const { nodes, cluster } = await startCluster(3);
  return {
    provider: cluster,
    teardown: async () => {
      await cluster.close();
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
});

describe('cluster client', () => {
  let nodes: NodeProcess[];
  let cluster: SandboxClusterClient;
  beforeAll(async () => {
    ({ nodes, cluster } = await startCluster(3));
  });
  afterAll(async () => {
    await cluster.close();
    await Promise.all(nodes.map((node) => node.stop()));
  });

  it('spreads new sessions over the least-loaded nodes', async () => {
    const sessions = await Promise.all([cluster.openSession(), cluster.openSession(), cluster.openSession()]);
    try {
      expect(new Set(sessions.map((session) => session.node)).size).toBe(3);
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
    }
  });

  it('reports node-lost when a node dies mid-session, then moves on to live nodes', async () => {
    const session = await cluster.openSession();
    await session.execute('state = "kept"');
    const victim = nodes.find((node) => node.url === session.node)!;
    const victimPid = victim.child.pid!;
    const running = session.execute('import time\ntime.sleep(20)', { timeoutMs: 25_000 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    victim.child.kill('SIGKILL');
    const lost = await running;
    expect(lost.status).toBe('killed');
    if (lost.status === 'killed') expect(lost.reason).toMatch(/^node-lost/);

    const after = await session.execute('print("state" in globals())');
    expect(after).toMatchObject({ status: 'ok', stdout: 'False\n' });
    expect(session.node).not.toBe(victim.url);
    expect(cluster.status().find((node) => node.url === victim.url)?.healthy).toBe(false);

    const others = await Promise.all([cluster.openSession(), cluster.openSession(), cluster.openSession()]);
    expect(others.every((other) => other.node !== victim.url)).toBe(true);
    await Promise.all([...others, session].map((each) => each.close()));

    // The dead node's jails died with it: no process of its worker uids is left.
    const victimUids = Array.from(
      { length: 256 },
      (_, index) => 1_000_000 + (victimPid % 4_194_304) * 256 + index,
    );
    for (let attempt = 0; attempt < 50 && processesOf(victimUids).length > 0; attempt += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(processesOf(victimUids)).toEqual([]);
  });
});
