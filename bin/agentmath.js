#!/usr/bin/env node
// Launcher for the `agentmath` command. The sources are TypeScript run by Node's own type
// stripping (Node >= 22.18). On an older Node this re-executes itself with the Node 24 binary
// that the `node` npm package installed beside the project, so the command works either way.
// The re-executed process is a plain child: TERM, INT and HUP sent to this launcher are passed
// on to it, and its end comes back as this process's own (the same exit code, or death by the
// same signal, so `$?` is 128+N). A launcher killed with SIGKILL cannot pass anything on, so the
// child also holds one end of a pipe (fd 3, named by AGENTMATH_PARENT_FD) whose other end only
// this process holds: when it closes, the child stops as on SIGTERM (see process-lifecycle.ts).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const canStripTypes = Boolean(process.features?.typescript);

if (canStripTypes) {
  await import(join(root, 'src', 'cli', 'main.ts'));
} else {
  const bundled = join(root, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(bundled)) {
    process.stderr.write(
      `agentmath needs Node >= 22.18 (this is ${process.version}).\n` +
        'Run `npm install` in the project folder to fetch Node 24 from the npm registry, or install Node 24.\n',
    );
    process.exit(1);
  }
  const forwarded = ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];
  const child = spawn(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
    env: { ...process.env, AGENTMATH_PARENT_FD: '3' },
  });
  // Held open, never read: the kernel closes it when this process dies, however it dies.
  const lifeline = child.stdio[3];
  lifeline?.on('error', () => {});
  lifeline?.unref?.();
  const pass = (signal) => {
    try {
      child.kill(signal);
    } catch {
      // the child has ended already
    }
  };
  for (const signal of forwarded) process.on(signal, pass);
  child.on('error', (error) => {
    process.stderr.write(`agentmath: cannot start ${bundled}: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    for (const name of forwarded) process.off(name, pass);
    lifeline?.destroy();
    if (signal !== null) {
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}
