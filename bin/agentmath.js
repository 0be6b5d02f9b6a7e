#!/usr/bin/env node
// Launcher for the `agentmath` command. The sources are TypeScript run by Node's own type
// stripping (Node >= 22.18). On an older Node this re-executes itself with the Node 24 binary
// that the `node` npm package installed beside the project, so the command works either way.
import { spawnSync } from 'node:child_process';
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
  const result = spawnSync(bundled, [fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  process.exit(result.status ?? 1);
}
