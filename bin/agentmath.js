#!/usr/bin/env node
// Launcher for the `agentmath` command. The sources are TypeScript run by Node's own type
// stripping (Node >= 22.18). On an older Node this re-executes itself with the Node 24 binary
// that the `node` npm package installed beside the project, so the command works either way.
// The re-executed process is a plain child: TERM, INT and HUP sent to this launcher are passed
// on to it, and its end comes back as this process's own (the same exit code, or death by the
// same signal, so `$?` is 128+N).
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
    stdio: 'inherit',
  });
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
    if (signal !== null) {
      process.kill(process.pid, signal);
      return;
    }
    process.exit(code ?? 1);
  });
}
