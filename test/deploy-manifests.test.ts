/**
 * The Kubernetes manifests of deploy/k8s: the fields `train rl` relies on, checked with a zod
 * schema (headless Services in front of StatefulSets, so each sandbox node and engine replica
 * has its own URL; tokens from a Secret, never a literal; a GPU request on engines; the shared
 * run folder), the sandbox's flags against the real CLI, and a dry-run validation of every
 * object against Kubernetes' own schemas with kubernetes-validate (pinned in pyproject.toml's
 * `deploy-check` group, installed by scripts/setup.sh into .venv-deploy; offline, bundled
 * schemas) where it is installed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PROJECT_ROOT, trainerPython } from '../src/shared/python-environments.ts';

const folder = join(PROJECT_ROOT, 'deploy', 'k8s');
const files = readdirSync(folder).filter((name) => name.endsWith('.yaml'));

/** YAML → JSON with PyYAML, which uv.lock pins (a dependency of transformers and of kubernetes-validate). */
function readManifests(file: string): unknown[] {
  const script =
    'import json, sys, yaml\nprint(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d]))';
  const result = spawnSync(trainerPython(), ['-c', script, join(folder, file)], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`cannot read ${file}: ${result.stderr}`);
  return JSON.parse(result.stdout) as unknown[];
}

const labels = z.record(z.string(), z.string());
const metadata = z.object({ name: z.string(), labels: labels.optional() });
const environmentVariable = z.union([
  z.object({
    name: z.string(),
    valueFrom: z.object({ secretKeyRef: z.object({ name: z.string(), key: z.string() }) }),
  }),
  z.object({ name: z.string(), value: z.string() }),
]);
const container = z.object({
  name: z.string(),
  image: z.string().min(1),
  command: z.array(z.string()).min(1),
  args: z.array(z.string()),
  env: z.array(environmentVariable).default([]),
  ports: z.array(z.object({ name: z.string(), containerPort: z.number().int() })).min(1),
  resources: z.object({
    requests: z.record(z.string(), z.union([z.string(), z.number()])),
    limits: z.record(z.string(), z.union([z.string(), z.number()])),
  }),
  volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() })).default([]),
});
const service = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('Service'),
  metadata,
  spec: z.object({
    clusterIP: z.literal('None'),
    selector: labels,
    ports: z.array(z.object({ name: z.string(), port: z.number().int(), targetPort: z.string() })),
  }),
});
const statefulSet = z.object({
  apiVersion: z.literal('apps/v1'),
  kind: z.literal('StatefulSet'),
  metadata,
  spec: z.object({
    serviceName: z.string(),
    replicas: z.number().int().positive(),
    selector: z.object({ matchLabels: labels }),
    template: z.object({
      metadata: z.object({ labels }),
      spec: z.object({
        containers: z.array(container).length(1),
        volumes: z
          .array(
            z.object({
              name: z.string(),
              persistentVolumeClaim: z.object({ claimName: z.string() }).optional(),
            }),
          )
          .default([]),
      }),
    }),
  }),
});
const claim = z.object({
  apiVersion: z.literal('v1'),
  kind: z.literal('PersistentVolumeClaim'),
  metadata,
  spec: z.object({ accessModes: z.array(z.string()) }),
});
const manifest = z.discriminatedUnion('kind', [service, statefulSet, claim]);

const objects = files.flatMap((file) => readManifests(file).map((object) => ({ file, object })));
const checked = objects.map(({ file, object }) => ({ file, result: manifest.safeParse(object) }));
const parsed = checked.flatMap(({ file, result }) => (result.success ? [{ file, object: result.data }] : []));
const statefulSets = parsed.flatMap(({ object }) => (object.kind === 'StatefulSet' ? [object] : []));
const services = parsed.flatMap(({ object }) => (object.kind === 'Service' ? [object] : []));
const claims = parsed.flatMap(({ object }) => (object.kind === 'PersistentVolumeClaim' ? [object] : []));
const named = (name: string) => {
  const found = statefulSets.find((set) => set.metadata.name === name);
  if (!found) throw new Error(`no StatefulSet ${name} in deploy/k8s`);
  return found.spec.template.spec.containers[0] as z.infer<typeof container>;
};
const flagValue = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

describe('deploy/k8s manifests', () => {
  it('hold sandbox nodes, engines and shared storage, each object of a kind we check', () => {
    expect(files.sort()).toEqual(['engine-sglang.yaml', 'sandbox.yaml', 'shared-storage.yaml']);
    const failures = checked.flatMap(({ file, result }) =>
      result.success ? [] : [`${file}: ${result.error.message}`],
    );
    expect(failures).toEqual([]);
    expect(statefulSets.map((set) => set.metadata.name).sort()).toEqual([
      'agentmath-engine',
      'agentmath-sandbox',
    ]);
    // No Secret is shipped: tokens live in one the user creates.
    expect(objects.map(({ object }) => (object as { kind: string }).kind)).not.toContain('Secret');
  });

  it('give every StatefulSet a headless Service of its name that selects its pods and names its port', () => {
    for (const set of statefulSets) {
      const front = services.find((candidate) => candidate.metadata.name === set.spec.serviceName);
      expect(front, set.metadata.name).toBeDefined();
      const podLabels = set.spec.template.metadata.labels;
      for (const [key, value] of Object.entries(front?.spec.selector ?? {}))
        expect(podLabels[key]).toBe(value);
      for (const [key, value] of Object.entries(set.spec.selector.matchLabels))
        expect(podLabels[key]).toBe(value);
      const portNames = set.spec.template.spec.containers.flatMap((c) => c.ports.map((port) => port.name));
      for (const port of front?.spec.ports ?? []) expect(portNames).toContain(port.targetPort);
    }
  });

  it('take tokens from the Secret, never as literal values', () => {
    for (const set of statefulSets) {
      for (const variable of set.spec.template.spec.containers.flatMap((c) => c.env)) {
        if (/TOKEN|KEY|SECRET|PASSWORD/i.test(variable.name)) {
          expect('valueFrom' in variable, variable.name).toBe(true);
        }
      }
    }
    const sandbox = named('agentmath-sandbox');
    // Beyond loopback the sandbox refuses to start without a token (src/shared/bind-auth.ts).
    expect(flagValue(sandbox.args, '--host')).toBe('0.0.0.0');
    expect(sandbox.args).not.toContain('--no-auth');
    expect(sandbox.env.map((variable) => variable.name)).toContain('AGENTMATH_SANDBOX_TOKEN');
    const engine = named('agentmath-engine');
    expect(flagValue(engine.args, '--api-key')).toBe('$(AGENTMATH_ENGINE_API_KEY)');
    expect(engine.env.map((variable) => variable.name)).toContain('AGENTMATH_ENGINE_API_KEY');
  });

  it('request GPUs for the engine, matching its tensor parallelism, and mount the shared run folder', () => {
    const engine = named('agentmath-engine');
    const gpus = Number(engine.resources.limits['nvidia.com/gpu']);
    expect(gpus).toBeGreaterThan(0);
    expect(Number(flagValue(engine.args, '--tp-size'))).toBe(gpus);
    expect(flagValue(engine.args, '--model-path')?.startsWith('/shared/')).toBe(true);
    expect(engine.volumeMounts.map((mount) => mount.mountPath)).toContain('/shared');
    const volumes = statefulSets.find((set) => set.metadata.name === 'agentmath-engine')?.spec.template.spec
      .volumes;
    const claimName = volumes?.find((volume) => volume.persistentVolumeClaim)?.persistentVolumeClaim
      ?.claimName;
    expect(claims.map((candidate) => candidate.metadata.name)).toContain(claimName);
    expect(claims[0]?.spec.accessModes).toContain('ReadWriteMany');
  });

  it('pin the engine image to the SGLang version the docs follow (0.5.23), never a moving tag', () => {
    expect(named('agentmath-engine').image).toBe('lmsysorg/sglang:v0.5.23');
  });

  it('pass the sandbox only flags that `agentmath sandbox serve` has', () => {
    const sandbox = named('agentmath-sandbox');
    expect(sandbox.command.slice(-3)).toEqual(['bin/agentmath.js', 'sandbox', 'serve']);
    const help = spawnSync(
      process.execPath,
      [join(PROJECT_ROOT, 'bin/agentmath.js'), 'sandbox', 'serve', '--help'],
      {
        encoding: 'utf8',
      },
    ).stdout;
    const flags = sandbox.args.filter((argument) => argument.startsWith('--'));
    expect(flags.length).toBeGreaterThan(0);
    for (const flag of flags) expect(help, flag).toMatch(new RegExp(`\\s${flag}[ ,]`));
    expect(Number(flagValue(sandbox.args, '--port'))).toBe(sandbox.ports[0]?.containerPort);
  });

  const validator = join(PROJECT_ROOT, '.venv-deploy', 'bin', 'kubernetes-validate');
  it.skipIf(!existsSync(validator))(
    'validate against the Kubernetes 1.37 schemas, strict, offline (skipped when .venv-deploy has no kubernetes-validate: run scripts/setup.sh)',
    () => {
      const version = spawnSync(validator, ['--version'], { encoding: 'utf8' });
      expect(version.stdout.trim()).toBe('1.37.0');
      const result = spawnSync(
        validator,
        ['--strict', '--kubernetes-version', '1.37.0', ...files.map((file) => join(folder, file))],
        { encoding: 'utf8' },
      );
      expect(result.stdout + result.stderr).not.toMatch(/ERROR|did not validate/);
      expect(result.status).toBe(0);
      expect(result.stdout.match(/passed for resource/g)).toHaveLength(objects.length);
    },
  );
});
