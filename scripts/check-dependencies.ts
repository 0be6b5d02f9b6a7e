/**
 * The module dependency rules of DESIGN.md, checked on the source: every import from one
 * folder under `src/` into another must follow an allowed edge (directly, or through what the
 * allowed modules themselves may use). `src/shared` is usable by all and uses no module.
 * Nothing imports `cli`. A folder missing from the table is an error, so a new module is
 * placed in the table when it is added; modules of the table that do not exist yet are fine.
 * Unit tests beside the source (`*.test.ts`) follow the same rules. No file may reach itself
 * through its imports (an import circle), type-only imports (`import type`) included: a circle
 * of types is still two files that cannot be understood one without the other.
 *
 * Usage: node scripts/check-dependencies.ts [srcDir]   (exit status 1 on a violation)
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';

/** Direct allowed edges; each module may also use whatever those use. */
export const ALLOWED: Record<string, readonly string[]> = {
  protocol: [],
  trajectory: ['protocol'],
  sandbox: [],
  grader: ['sandbox'],
  engine: ['trajectory'],
  agent: ['protocol', 'trajectory', 'engine', 'sandbox'],
  tasks: ['protocol', 'sandbox'],
  model: ['agent', 'protocol', 'tasks'],
  rollout: ['agent', 'grader'],
  eval: ['agent', 'grader', 'tasks'],
  train: ['rollout', 'engine', 'eval', 'tasks', 'model'],
  synth: ['engine', 'sandbox', 'grader', 'tasks', 'train'],
  sim: ['engine', 'sandbox', 'rollout', 'tasks'],
  quickstart: ['train', 'eval', 'tasks', 'engine', 'sandbox', 'agent', 'model'],
  records: ['train', 'rollout', 'eval', 'quickstart'],
  bench: ['*'],
  cli: ['*'],
};

/** Modules that anything may use. */
const EVERYONE = new Set(['shared']);

/** Every module `module` may import, following the table transitively. */
export function reachable(module: string): Set<string> {
  const seen = new Set<string>();
  const stack = [...(ALLOWED[module] ?? [])];
  while (stack.length > 0) {
    const next = stack.pop() as string;
    if (next === '*') {
      for (const name of Object.keys(ALLOWED)) if (name !== 'cli' && name !== module) seen.add(name);
      continue;
    }
    if (seen.has(next)) continue;
    seen.add(next);
    stack.push(...(ALLOWED[next] ?? []));
  }
  if (module === 'cli') for (const name of Object.keys(ALLOWED)) if (name !== 'cli') seen.add(name);
  return seen;
}

export type Violation = { file: string; line: number; from: string; to: string; specifier: string };

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(?\s*)['"]([^'"]+)['"]/g;

/** The violations in one file's text (`file` relative to the source root, `/`-separated). */
export function violationsIn(file: string, text: string): Violation[] {
  const from = file.split('/')[0] ?? '';
  const allowed = reachable(from);
  const found: Violation[] = [];
  text.split('\n').forEach((lineText, index) => {
    for (const match of lineText.matchAll(IMPORT)) {
      const specifier = match[1] ?? '';
      if (!specifier.startsWith('.')) continue;
      const target = join(file, '..', specifier).split(sep).join('/');
      if (target.startsWith('..')) continue;
      const to = target.split('/')[0] ?? '';
      if (to === from || EVERYONE.has(to) || !target.includes('/')) continue;
      if (to === 'cli' || !allowed.has(to)) found.push({ file, line: index + 1, from, to, specifier });
    }
  });
  return found;
}

/** The files `file` imports by a relative specifier (value and type-only alike), `/`-separated. */
function importedFiles(file: string, text: string): string[] {
  return [...text.matchAll(IMPORT)]
    .map((match) => match[1] ?? '')
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => join(file, '..', specifier).split(sep).join('/'));
}

/**
 * The import circles among `texts` (file → its text): each circle's files in import order,
 * the first file repeated at the end. Tarjan's strongly connected components over the import
 * graph; a component of more than one file (or a file importing itself) holds a circle.
 */
export function importCircles(texts: ReadonlyMap<string, string>): string[][] {
  const graph = new Map([...texts].map(([file, text]) => [file, importedFiles(file, text).filter((to) => texts.has(to))]));
  const order = new Map<string, number>();
  const lowest = new Map<string, number>();
  const stack: string[] = [];
  const circles: string[][] = [];
  const visit = (file: string) => {
    order.set(file, order.size);
    lowest.set(file, order.get(file) as number);
    stack.push(file);
    for (const to of graph.get(file) ?? []) {
      if (!order.has(to)) {
        visit(to);
        lowest.set(file, Math.min(lowest.get(file) as number, lowest.get(to) as number));
      } else if (stack.includes(to)) {
        lowest.set(file, Math.min(lowest.get(file) as number, order.get(to) as number));
      }
    }
    if (lowest.get(file) !== order.get(file)) return;
    const component = stack.splice(stack.indexOf(file));
    if (component.length > 1 || graph.get(file)?.includes(file)) circles.push(circleThrough(component, graph));
  };
  for (const file of graph.keys()) if (!order.has(file)) visit(file);
  return circles;
}

/** One circle inside a strongly connected `component`, from its first file back to it. */
function circleThrough(component: string[], graph: Map<string, string[]>): string[] {
  const members = new Set(component);
  const start = [...members].sort()[0] as string;
  // Breadth-first from `start` to the first file that imports `start`: the shortest circle.
  const previous = new Map<string, string>([[start, start]]);
  const queue = [start];
  while (queue.length > 0) {
    const file = queue.shift() as string;
    for (const to of graph.get(file) ?? []) {
      if (to === start) {
        const path = [file];
        while (path[0] !== start) path.unshift(previous.get(path[0] as string) as string);
        return [...path, start];
      }
      if (members.has(to) && !previous.has(to)) {
        previous.set(to, file);
        queue.push(to);
      }
    }
  }
  return [start, start];
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return tsFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

/** Checks every module folder under `srcDir`; returns the problems as printable lines. */
export function checkDependencies(srcDir: string): string[] {
  const problems: string[] = [];
  for (const name of readdirSync(srcDir)) {
    if (!statSync(join(srcDir, name)).isDirectory()) continue;
    if (!EVERYONE.has(name) && ALLOWED[name] === undefined) {
      problems.push(`src/${name}: module not in the dependency table (scripts/check-dependencies.ts)`);
    }
  }
  const texts = new Map<string, string>();
  for (const path of tsFiles(srcDir)) {
    const file = relative(srcDir, path).split(sep).join('/');
    texts.set(file, readFileSync(path, 'utf8'));
  }
  for (const circle of importCircles(texts)) {
    problems.push(`import circle: ${circle.map((file) => `src/${file}`).join(' → ')}`);
  }
  for (const [file, text] of texts) {
    if (!file.includes('/')) continue;
    const module = file.split('/')[0] ?? '';
    if (ALLOWED[module] === undefined && !EVERYONE.has(module)) continue;
    if (EVERYONE.has(module)) {
      for (const match of text.matchAll(IMPORT)) {
        const target = join(file, '..', match[1] ?? '').split(sep).join('/');
        if ((match[1] ?? '').startsWith('.') && !target.startsWith(`${module}/`) && target.includes('/')) {
          problems.push(`src/${file}: src/${module} may use no module, but imports ${match[1]}`);
        }
      }
      continue;
    }
    for (const violation of violationsIn(file, text)) {
      problems.push(
        `src/${violation.file}:${violation.line}: ${violation.from} may not import ${violation.to} (${violation.specifier})`,
      );
    }
  }
  return problems;
}

if (import.meta.main) {
  const srcDir = resolve(process.argv[2] ?? 'src');
  const problems = checkDependencies(srcDir);
  for (const problem of problems) process.stderr.write(`${problem}\n`);
  if (problems.length > 0) {
    process.stderr.write(`${problems.length} import(s) break the module rules of docs/architecture.md\n`);
    process.exit(1);
  }
  process.stdout.write('module dependencies: ok\n');
}
