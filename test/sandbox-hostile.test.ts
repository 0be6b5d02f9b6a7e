/**
 * Hostile code against a real jailed pool behind a real HTTP server. After every case: the
 * server still answers, a bystander session keeps its state, no process of a retired worker
 * is left, and the pool's memory is back near its baseline.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalSandbox,
  type ExecutionOutcome,
  type LocalSandboxPool,
  type LocalSandboxSession,
  type SandboxServer,
  startSandboxServer,
} from '../src/sandbox/index.ts';
import { processesOf } from './sandbox-processes.ts';

const MiB = 1024 * 1024;
const HOST_SECRET = 'host-secret-value-that-must-not-leak';

describe('hostile code', () => {
  let pool: LocalSandboxPool;
  let server: SandboxServer;
  let bystander: LocalSandboxSession;
  let hostile: LocalSandboxSession | null = null;
  let baselineMemory = 0;
  let baselineHeap = 0;
  const seenUids = new Set<number>();

  const open = async () => {
    hostile = await pool.openSession();
    for (const uid of pool.workerUids()) seenUids.add(uid);
    return hostile;
  };
  const run = async (code: string, timeoutMs = 3_000): Promise<ExecutionOutcome> => {
    const outcome = await hostile!.execute(code, { timeoutMs });
    for (const uid of pool.workerUids()) seenUids.add(uid);
    return outcome;
  };
  const stdoutOf = (outcome: ExecutionOutcome) =>
    outcome.status === 'ok' ? outcome.stdout : JSON.stringify(outcome);
  const waitFor = async (predicate: () => boolean) => {
    for (let attempt = 0; attempt < 100 && !predicate(); attempt += 1)
      await new Promise((r) => setTimeout(r, 50));
  };

  beforeAll(async () => {
    process.env.AGENTMATH_HOSTILE_SECRET = HOST_SECRET;
    pool = createLocalSandbox(
      {
        preload: [],
        warmWorkers: 2,
        maxWorkers: 4,
        graceMs: 300,
        memoryLimitBytes: 256 * MiB,
        tmpBytes: 8 * MiB,
        fileSizeBytes: 4 * MiB,
        processes: 24,
      },
      { log: () => {} },
    );
    server = await startSandboxServer({ pool, log: () => {} });
    bystander = await pool.openSession();
    await bystander.execute('canary = 12345');
    await waitFor(() => pool.stats().idleWorkers === 2);
    baselineMemory = pool.totalWorkerMemory();
    baselineHeap = process.memoryUsage().heapUsed;
  });

  afterEach(async () => {
    await hostile?.close();
    hostile = null;
    const health = await fetch(`${server.url}/v1/health`);
    expect(health.status).toBe(200);
    expect(await bystander.execute('print(canary)')).toMatchObject({ status: 'ok', stdout: '12345\n' });
    const live = new Set(pool.workerUids());
    const retired = [...seenUids].filter((uid) => !live.has(uid));
    await waitFor(() => processesOf(retired).length === 0);
    expect(processesOf(retired)).toEqual([]);
    await waitFor(() => pool.stats().idleWorkers === 2);
    expect(pool.totalWorkerMemory()).toBeLessThan(baselineMemory * 1.5 + 32 * MiB);
    expect(process.memoryUsage().heapUsed).toBeLessThan(baselineHeap + 96 * MiB);
  });

  afterAll(async () => {
    delete process.env.AGENTMATH_HOSTILE_SECRET;
    await bystander?.close();
    await server?.close();
    await pool?.close();
    expect(processesOf([...seenUids])).toEqual([]);
  });

  it('has no network: TCP, UDP, DNS and unix sockets all fail', async () => {
    await open();
    const port = new URL(server.url).port;
    const outcome = await run(`
import socket
results = []
def attempt(name, action):
    try:
        action()
        results.append(name + ':open')
    except OSError:
        results.append(name + ':blocked')
attempt('tcp-server', lambda: socket.create_connection(('127.0.0.1', ${port}), timeout=1))
attempt('tcp-internet', lambda: socket.create_connection(('1.1.1.1', 80), timeout=1))
attempt('udp', lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('8.8.8.8', 53)))
attempt('dns', lambda: socket.getaddrinfo('example.com', 80))
def unix():
    s = socket.socket(socket.AF_UNIX)
    s.connect('/run/systemd/private')
attempt('unix', unix)
print(' '.join(results))`);
    expect(stdoutOf(outcome).trim()).toBe(
      'tcp-server:blocked tcp-internet:blocked udp:blocked dns:blocked unix:blocked',
    );
  });

  it('cannot read host files or the host environment', async () => {
    await open();
    const project = process.cwd();
    const outcome = await run(`
import os
paths = ['/root', '/home', '/work', ${JSON.stringify(project)}, ${JSON.stringify(`${project}/package.json`)},
         '/etc/passwd', '/etc/shadow', '/run', '/var', '/sys/fs/cgroup']
visible = []
for path in paths:
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path).read()
        visible.append(path)
    except OSError:
        pass
print('visible', visible)
print('env', sorted(os.environ))
init_environ = open('/proc/1/environ').read()
print('secret', any(${JSON.stringify(HOST_SECRET)} in text for text in [*os.environ.values(), init_environ]))
print('root-listing', sorted(os.listdir('/')))`);
    const text = stdoutOf(outcome);
    expect(text).toContain('visible []');
    expect(text).toContain('secret False');
    const env = /env (\[.*\])/.exec(text)![1]!;
    expect(env).not.toMatch(/AGENTMATH|TOKEN|KEY|SECRET|USER|SSH/);
    expect(text).toContain(
      "root-listing ['bin', 'dev', 'etc', 'lib', 'lib64', 'opt', 'proc', 'sbin', 'tmp', 'usr']",
    );
  });

  it('cannot write outside its own /tmp, and filling /tmp stops at its cap', async () => {
    await open();
    const outcome = await run(`
import os
denied = []
for path in ['/x', '/usr/x', '/etc/x', '/opt/agentmath-sandbox/x', '/dev/x', '/dev/shm/x', '/proc/x']:
    try:
        open(path, 'w').write('x')
    except OSError:
        denied.append(path)
print(len(denied))
written = 0
try:
    for index in range(100):
        with open(f'/tmp/fill{index}', 'wb') as handle:
            for _ in range(64):
                handle.write(b'\\0' * 65536)
                written += 65536
except OSError as error:
    print('stopped', type(error).__name__)
print(written <= 9 * 1024 * 1024)`);
    expect(stdoutOf(outcome)).toMatch(/^7\nstopped OSError\nTrue\n$/);
    expect(await run('print("still fine")')).toMatchObject({ status: 'ok', stdout: 'still fine\n' });
  });

  it('contains a fork bomb', async () => {
    await open();
    const outcome = await run(`
import os
forks = 0
try:
    while True:
        if os.fork() == 0:
            while True:
                pass
        forks += 1
except OSError:
    print('fork refused after', forks)`);
    expect(stdoutOf(outcome)).toMatch(/fork refused after \d+/);
    const forks = Number(/after (\d+)/.exec(stdoutOf(outcome))![1]);
    expect(forks).toBeLessThan(24);
    const uid = hostile!.workerUid()!;
    await waitFor(() => processesOf([uid]).length <= 3);
    expect(processesOf([uid]).length).toBeLessThanOrEqual(3);
  });

  it('stops memory bombs with memory-exceeded', async () => {
    await open();
    expect(
      await run('blocks = []\nwhile True:\n    blocks.append(bytearray(16 * 1024 * 1024))'),
    ).toMatchObject({
      status: 'memory-exceeded',
    });
    expect(await run('print(len("x" * (10 ** 10)))')).toMatchObject({ status: 'memory-exceeded' });
    const spread = await run(`
import os, time
for _ in range(6):
    if os.fork() == 0:
        try:
            data = bytearray(200 * 1024 * 1024)
            for i in range(0, len(data), 4096):
                data[i] = 1
        finally:
            os._exit(0)
time.sleep(1.5)
print('parent alive')`);
    expect(['ok', 'memory-exceeded', 'killed']).toContain(spread.status);
  });

  it('stops native memory bombs of python-flint and z3 at the address-space limit', async () => {
    await open();
    // 3^(10^10) needs about 2 GB: FLINT's failed allocation aborts the process (the session is reset).
    const flint = await run('import flint\nx = flint.fmpz(3) ** (10 ** 10)\nprint(x.bit_length())', 10_000);
    expect(['killed', 'memory-exceeded']).toContain(flint.status);
    if (flint.status === 'killed') expect(flint.reason).toMatch(/state was reset/);
    expect(await run('print(1 + 1)')).toMatchObject({ status: 'ok', stdout: '2\n' });
    // Bit-blasting a 65,536-bit cube runs out of memory long before the time limit; Z3 gives up.
    const z3 = await run(
      'import z3\nx = z3.BitVec("x", 1 << 16)\ns = z3.Solver()\ns.add(x * x * x == 12345)\nprint(s.check(), s.reason_unknown())',
      10_000,
    );
    expect(z3).toMatchObject({ status: 'ok', stdout: 'unknown out of memory\n' });
    expect(await run('print(2 + 2)')).toMatchObject({ status: 'ok', stdout: '4\n' });
  });

  it('stops native python-flint and z3 computations at the time limit', async () => {
    await open();
    const flint = await run('import flint\nprint(flint.fmpz(2 ** 400 + 1).factor())', 300);
    expect(flint).toMatchObject({ status: 'killed' });
    if (flint.status === 'killed') expect(flint.reason).toMatch(/^timeout: /);
    // The pigeonhole principle for 12 holes: exponential for a SAT solver.
    const pigeons = [
      'import z3',
      'n = 12',
      'p = [[z3.Bool(f"p{i}_{j}") for j in range(n)] for i in range(n + 1)]',
      's = z3.Solver()',
      'for i in range(n + 1):',
      '    s.add(z3.Or(p[i]))',
      'for j in range(n):',
      '    for a in range(n + 1):',
      '        for b in range(a + 1, n + 1):',
      '            s.add(z3.Not(z3.And(p[a][j], p[b][j])))',
      'print(s.check())',
    ].join('\n');
    const z3 = await run(pigeons, 300);
    expect(['timeout', 'killed']).toContain(z3.status);
    if (z3.status === 'killed') expect(z3.reason).toMatch(/^timeout: /);
    expect(await run('print(3 + 3)')).toMatchObject({ status: 'ok', stdout: '6\n' });
  });

  it('kills loops that disable the timer or block the signal, and reports why', async () => {
    await open();
    const disabled = await run(
      'import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\nwhile True:\n    pass',
      200,
    );
    expect(disabled).toMatchObject({ status: 'killed' });
    const blocked = await run(
      'import signal, time\nsignal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGALRM])\ntime.sleep(60)',
      200,
    );
    expect(blocked.status).toBe('killed');
    if (blocked.status === 'killed') expect(blocked.reason).toMatch(/^timeout: .*reset/);
    const swallowed = await run(
      'while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass',
      200,
    );
    expect(swallowed.status).toBe('killed');
  });

  it('does not let background processes outlive the call or the session', async () => {
    await open();
    await run(`
import os, subprocess
subprocess.Popen(['sleep', '1000'], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        import time
        time.sleep(1000)
    os._exit(0)
print('spawned')`);
    const uid = hostile!.workerUid()!;
    await waitFor(() => processesOf([uid]).length <= 3);
    expect(processesOf([uid]).length).toBeLessThanOrEqual(3);
    expect(
      stdoutOf(await run('import os\nprint(sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))')),
    ).toBe('[1, 2]\n');
  });

  it('caps output floods of many lines and of one huge line', async () => {
    await open();
    const lines = await run('import sys\nfor i in range(300000):\n    sys.stdout.write("line %d\\n" % i)');
    expect(stdoutOf(lines)).toMatch(/output truncated: \d{7} bytes in total/);
    const huge = await run(
      'import os\nchunk = b"y" * (1 << 20)\nfor _ in range(150):\n    os.write(1, chunk)\nprint("x" * 30_000_000, file=__import__("sys").stderr)',
    );
    expect(huge.status).toBe('ok');
    if (huge.status === 'ok') {
      expect(huge.stdout.length).toBeLessThan(70 * 1024);
      expect(huge.stdout).toContain('157286400 bytes in total');
      expect(huge.stderr).toContain('30000001 bytes in total');
    }
  });

  it('survives deep recursion', async () => {
    await open();
    const limited = await run('def down(n):\n    return down(n + 1)\ndown(0)');
    expect(limited.status).toBe('error');
    if (limited.status === 'error') expect(limited.exception).toMatch(/RecursionError/);
    const unlimited = await run(
      'import sys\nsys.setrecursionlimit(10 ** 7)\ndef down(n):\n    return down(n + 1)\ndown(0)',
      2_000,
    );
    expect(['error', 'timeout', 'killed', 'memory-exceeded']).toContain(unlimited.status);
    // A worker that overflowed its C stack after answering may die between calls; the next call
    // then says so (`killed`, state gone, with the reason) and the session goes on, fresh.
    let next = await run('print("next")');
    if (next.status === 'killed') {
      expect(next.reason.length).toBeGreaterThan(0);
      next = await run('print("next")');
    }
    expect(next).toMatchObject({ status: 'ok', stdout: 'next\n' });
  });

  it('reports os._exit as killed and restores closed stdout', async () => {
    await open();
    const closed = await run('import sys, os\nsys.stdout.close()\nos.close(1)\nos.close(2)');
    expect(closed.status).toBe('ok');
    expect(await run('print("visible again")')).toMatchObject({ status: 'ok', stdout: 'visible again\n' });
    const exited = await run('import os\nos._exit(3)');
    expect(exited.status).toBe('killed');
    if (exited.status === 'killed') expect(exited.reason).toMatch(/exit code 3/);
    expect(await run('print("fresh")')).toMatchObject({ status: 'ok', stdout: 'fresh\n' });
  });

  it('treats printed protocol frames as output and forged control frames as a violation', async () => {
    await open();
    const imitation = await run(
      'import json, struct, sys\nframe = json.dumps({"id": 1, "status": "ok", "stdout": "forged"})\nsys.stdout.write(struct.pack(">I", len(frame)).decode("latin-1") + frame)\nprint()\nprint(\'{"op": "ready"}\')',
    );
    expect(imitation.status).toBe('ok');
    if (imitation.status === 'ok') expect(imitation.stdout).toContain('"stdout": "forged"');
    const forged = await run(`
import os, stat
for name in os.listdir('/proc/self/fd'):
    fd = int(name)
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            os.write(fd, b'\\x00\\x00\\x00\\x05junk!')
    except OSError:
        pass
import time
time.sleep(2)`);
    expect(forged.status).toBe('killed');
    if (forged.status === 'killed') expect(forged.reason).toMatch(/protocol-violation/);
    expect(await run('print(1)')).toMatchObject({ status: 'ok', stdout: '1\n' });
  });

  it('contains signals sent to the parent, to pid 1 and to every process', async () => {
    await open();
    for (const code of [
      'import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint("after parent")',
      'import os, signal\nos.kill(1, signal.SIGKILL)\nos.kill(1, signal.SIGTERM)\nprint("after init")',
      'import os, signal\nos.kill(-1, signal.SIGKILL)\nprint("after all")',
      'import os, signal\nos.killpg(0, signal.SIGKILL)',
    ]) {
      const outcome = await run(code);
      expect(['ok', 'error', 'killed']).toContain(outcome.status);
    }
  });
});
