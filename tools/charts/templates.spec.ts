// What can be checked of the Helm templates without helm (none runs here): every block is
// closed, every `include` names a template the chart defines, and every `.Values.x.y` the
// templates read is a key of the chart's values.yaml, so a typo renders as an error here rather
// than as an empty value on a cluster. Rendering itself (helm template, kubeconform) is left to
// a machine with helm (docs/kubernetes.md#checking-the-chart).
import { existsSync, readdirSync, readFileSync } from 'fs';
import { join } from 'path';
import { parse } from 'yaml';
import { REPO_ROOT } from '@gpufleet/process-kit';

const UMBRELLA = join(REPO_ROOT, 'charts/gpufleet');
const SUBCHARTS = readdirSync(join(UMBRELLA, 'charts')).sort();
const CHARTS = [UMBRELLA, ...SUBCHARTS.map((c) => join(UMBRELLA, 'charts', c))];

interface Template {
  file: string;
  text: string;
}

function templatesOf(chart: string): Template[] {
  const dir = join(chart, 'templates');
  return readdirSync(dir)
    .filter((f) => /\.(yaml|tpl|txt)$/.test(f))
    .map((f) => ({ file: f, text: readFileSync(join(dir, f), 'utf8') }));
}

/** The actions of a template, comments removed. */
function actions(text: string): string[] {
  return [...text.matchAll(/\{\{-?\s*([\s\S]*?)\s*-?\}\}/g)].map((m) => m[1]).filter((a) => !a.startsWith('/*'));
}

function unbalanced(text: string): string[] {
  const stack: string[] = [];
  const problems: string[] = [];
  for (const a of actions(text)) {
    const word = /^(\w+)/.exec(a)?.[1];
    if (word && ['if', 'with', 'range', 'define', 'block'].includes(word)) stack.push(a);
    else if (word === 'end' && !stack.pop()) problems.push('an end without a block');
  }
  return [...problems, ...stack.map((a) => `{{ ${a} }} is never closed`)];
}

function hasPath(values: unknown, path: string[]): boolean {
  let at = values;
  for (const key of path) {
    if (typeof at !== 'object' || at === null || !(key in at)) return false;
    at = (at as Record<string, unknown>)[key];
  }
  return true;
}

/** `.Values.a.b` and `index .Values "a-b" "c"` references, as key paths. */
function valuePaths(text: string): string[][] {
  const dotted = [...text.matchAll(/\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)/g)].map((m) => m[1].slice(1).split('.'));
  const indexed = [...text.matchAll(/index\s+\.Values((?:\s+"[^"]+")+)/g)].map((m) => [...m[1].matchAll(/"([^"]+)"/g)].map((k) => k[1]));
  return [...dotted, ...indexed];
}

describe.each(CHARTS.map((c) => [c.slice(REPO_ROOT.length + 1), c]))('chart %s', (_, chart) => {
  const templates = templatesOf(chart);
  const values = parse(readFileSync(join(chart, 'values.yaml'), 'utf8')) as Record<string, unknown>;
  const defined = new Set(templates.flatMap((t) => [...t.text.matchAll(/define\s+"([^"]+)"/g)].map((m) => m[1])));

  it('has Chart.yaml, values.yaml, README.md and _helpers.tpl', () => {
    for (const f of ['Chart.yaml', 'values.yaml', 'README.md', 'templates/_helpers.tpl']) expect(existsSync(join(chart, f))).toBe(true);
  });

  it.each(templates.map((t) => [t.file, t]))('%s: closes every block', (__, t) => {
    expect(unbalanced(t.text)).toEqual([]);
  });

  it.each(templates.map((t) => [t.file, t]))('%s: includes only templates the chart defines', (__, t) => {
    const included = [...t.text.matchAll(/include\s+"([^"]+)"/g)].map((m) => m[1]);
    expect(included.filter((name) => !defined.has(name))).toEqual([]);
  });

  it.each(templates.map((t) => [t.file, t]))('%s: reads only keys values.yaml has', (__, t) => {
    // The umbrella's NOTES read subchart values (`index .Values "inference-router"` and below):
    // only their first key must be in the umbrella's values.
    const isUmbrella = chart === UMBRELLA;
    const missing = valuePaths(t.text)
      .map((p) => (isUmbrella && SUBCHARTS.includes(p[0]) ? p.slice(0, 1) : p))
      .filter((p) => !hasPath(values, p))
      .map((p) => p.join('.'));
    expect([...new Set(missing)]).toEqual([]);
  });
});

/**
 * The keys values.yaml documents with a `# -- ` comment (helm-docs' convention), in file
 * order: a key path per comment, its continuation lines being the `# ` lines right after it.
 */
function documentedKeys(valuesYaml: string): string[] {
  const keys: string[] = [];
  const stack: { indent: number; key: string }[] = [];
  let documented = false;
  for (const line of valuesYaml.split('\n')) {
    if (/^\s*# -- /.test(line)) {
      documented = true;
      continue;
    }
    if (/^\s*#/.test(line) || line.trim() === '') continue;
    const m = /^(\s*)([A-Za-z0-9_.-]+):/.exec(line);
    if (!m) continue;
    const indent = m[1].length;
    while (stack.length && stack[stack.length - 1].indent >= indent) stack.pop();
    stack.push({ indent, key: m[2] });
    if (documented) keys.push(stack.map((s) => s.key).join('.'));
    documented = false;
  }
  return keys;
}

describe.each(CHARTS.map((c) => [c.slice(REPO_ROOT.length + 1), c]))('README of chart %s', (_, chart) => {
  const readme = readFileSync(join(chart, 'README.md'), 'utf8');
  const table = readme.slice(readme.indexOf('\n## Values'));
  const rows = [...table.matchAll(/^\| `([^`]+)` \|/gm)].map((m) => m[1]);
  const keys = documentedKeys(readFileSync(join(chart, 'values.yaml'), 'utf8'));

  it('has a Values table with a row for every documented value, and none for a value that is not there', () => {
    expect(keys.filter((k) => !rows.includes(k))).toEqual([]);
    expect(rows.filter((r) => !keys.includes(r))).toEqual([]);
  });
});

describe('the umbrella chart', () => {
  const chart = parse(readFileSync(join(UMBRELLA, 'Chart.yaml'), 'utf8')) as { dependencies: { name: string; repository: string; condition: string }[] };
  const values = parse(readFileSync(join(UMBRELLA, 'values.yaml'), 'utf8')) as Record<string, { enabled?: boolean }>;

  it('depends on every subchart, each switched by <name>.enabled', () => {
    expect(chart.dependencies.map((d) => d.name).sort()).toEqual(SUBCHARTS);
    for (const d of chart.dependencies) {
      expect(d).toMatchObject({ repository: `file://charts/${d.name}`, condition: `${d.name}.enabled` });
      expect(typeof values[d.name]?.enabled).toBe('boolean');
    }
  });

  it("every subchart's global defaults have the umbrella's global keys it reads", () => {
    const global = (values as unknown as { global: Record<string, unknown> }).global;
    for (const sub of SUBCHARTS) {
      const subGlobal = (parse(readFileSync(join(UMBRELLA, 'charts', sub, 'values.yaml'), 'utf8')) as { global: Record<string, unknown> }).global;
      for (const key of Object.keys(subGlobal)) expect([sub, key, key in global]).toEqual([sub, key, true]);
    }
  });
});

describe('the model-delivery subchart', () => {
  const dir = join(UMBRELLA, 'charts/model-delivery/templates');
  const daemonSet = readFileSync(join(dir, 'daemonset.yaml'), 'utf8');
  const deployment = readFileSync(join(dir, 'deployment.yaml'), 'utf8');
  /** The `- name: X` entry of an env list and the lines under it, up to the next entry. */
  const envOf = (text: string, name: string): string => new RegExp(`- name: ${name}\\n((?:\\s{14,}.*\\n)*)`).exec(text)?.[1] ?? '';

  it('runs the control role as a Deployment with probes and the node role as a DaemonSet, told apart by their selectors', () => {
    expect(deployment).toMatch(/kind: Deployment/);
    expect(envOf(deployment, 'ROLE')).toMatch(/value: control/);
    expect(deployment).toMatch(/livenessProbe:\n\s+httpGet:\n\s+path: \/healthz/);
    expect(deployment).toMatch(/readinessProbe:\n\s+httpGet:\n\s+path: \/readyz/);
    expect(daemonSet).toMatch(/kind: DaemonSet/);
    expect(envOf(daemonSet, 'ROLE')).toMatch(/value: node/);
    for (const [text, component] of [[deployment, 'control'], [daemonSet, 'node-cache']]) {
      expect(text).toMatch(new RegExp(`matchLabels:\\n\\s+\\{\\{- include "model-delivery.selectorLabels" \\. \\| nindent 6 \\}\\}\\n\\s+app.kubernetes.io/component: ${component}`));
    }
  });

  it('names its node, advertises its Pod IP to peers, takes PEER_TOKEN from a Secret and exposes the peer port', () => {
    expect(envOf(daemonSet, 'NODE_NAMES')).toMatch(/fieldPath: spec\.nodeName/);
    expect(envOf(daemonSet, 'PEER_ADVERTISE_HOST')).toMatch(/fieldPath: status\.podIP/);
    expect(envOf(daemonSet, 'PEER_TOKEN')).toMatch(/secretKeyRef:/);
    expect(daemonSet).toMatch(/- name: peer\n\s+containerPort: \{\{ \.Values\.peer\.port \}\}/);
  });

  it('mounts the cache hostPath at the path CACHE_DIR names, so the paths it records are the ones engine Pods mount', () => {
    expect(envOf(daemonSet, 'CACHE_DIR')).toMatch(/value: \{\{ \.Values\.node\.cache\.hostPath \| quote \}\}/);
    expect(daemonSet).toMatch(/- name: cache\n\s+mountPath: \{\{ \.Values\.node\.cache\.hostPath \}\}/);
    expect(daemonSet).toMatch(/- name: cache\n\s+hostPath:\n\s+path: \{\{ \.Values\.node\.cache\.hostPath \}\}/);
    expect(envOf(daemonSet, 'CACHE_HF_LAYOUT')).toMatch(/value: "true"/);
  });

  it('takes NATS credentials as the other subcharts do', () => {
    for (const text of [deployment, daemonSet]) {
      expect(text).toContain('include "model-delivery.sharedEnv" .');
      expect(text).toContain('include "model-delivery.sharedVolumes" .');
      expect(text).toContain('include "model-delivery.sharedVolumeMounts" .');
    }
  });
});
