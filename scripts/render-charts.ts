/**
 * Renders the upstream charts of the platform's UIs with `helm template` (default values, the
 * contract's release names and namespaces) and keeps only what ui-exposure reads: the Services
 * and the pod templates of Deployments, StatefulSets and DaemonSets (ports, labels, host
 * network). Output: test/data/charts/<file>.yaml, each headed by the chart, version and commit
 * it came from. Run through scripts/render-charts.sh (which builds helm); see
 * test/data/charts/README.md.
 *
 * The charts come from git mirrors of their upstream repositories (RENDER_CHARTS_MIRRORS,
 * default /work/.mirror, laid out `<owner>+<name>/repo`), checked out at the commit of the
 * release tag. Subcharts are placed in charts/<name> from their own upstream at the version the
 * parent's Chart.yaml (or Chart.lock) pins. A dependency disabled by default and not provided
 * is removed from the working copy's Chart.yaml (helm refuses a chart with a missing
 * dependency, enabled or not): its objects are not rendered with default values anyway.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parseAllDocuments, parseDocument, stringify } from "yaml";
import { EXIT } from "../src/core/findings";

interface Source {
  /** GitHub owner/name of the repository the chart was taken from. */
  repo: string;
  /** The release tag, and the commit it points at (checked against the mirror). */
  tag: string;
  commit: string;
  /** The chart's folder in the repository. */
  path: string;
  /** Where the repository mirrors another (the chart's canonical home). */
  upstream?: string;
}

interface Dependency {
  name: string;
  version: string;
  source: Source;
  dependencies?: Dependency[];
  /** Dependencies of this subchart disabled by default and not provided. */
  drop?: string[];
}

/** A chart inside a Go module (served by the Go module proxy), e.g. Cilium's in github.com/cilium/cilium. */
interface ModuleSource {
  module: string;
  version: string;
  path: string;
}

interface ChartSpec {
  /** Output file name (without .yaml). */
  file: string;
  chart: string;
  version: string;
  source: Source | ModuleSource;
  /** Values given on top of the chart's defaults (as `-f`), when the platform sets some. */
  values?: Record<string, unknown>;
  release: string;
  namespace: string;
  dependencies: Dependency[];
  drop: string[];
  /** Chart.yaml's version in git is a placeholder the release job replaces: set it as the release did. */
  setVersion?: string;
  /** What a reader must know about how this rendering differs from `helm install` of the release. */
  notes?: string[];
}

const bitnamiCommon = (version: string, commit: string): Dependency => ({
  name: "common",
  version,
  source: { repo: "bitnami/charts", tag: `common/${version}`, commit, path: "bitnami/common" },
});

const CHARTS: ChartSpec[] = [
  {
    file: "argo-cd",
    chart: "argo-cd",
    version: "10.1.1",
    source: { repo: "argoproj/argo-helm", tag: "argo-cd-10.1.1", commit: "af0a9310bacbaa4636018dfe22c801a6d33a5c43", path: "charts/argo-cd" },
    release: "argocd",
    namespace: "argocd",
    dependencies: [],
    drop: ["redis-ha"],
  },
  {
    file: "kube-prometheus-stack",
    chart: "kube-prometheus-stack",
    version: "88.5.3",
    source: {
      repo: "prometheus-community/helm-charts",
      tag: "kube-prometheus-stack-88.5.3",
      commit: "ea930baeebeba39f56d6b44e351f23b2a072a600",
      path: "charts/kube-prometheus-stack",
    },
    release: "kube-prometheus-stack",
    namespace: "monitoring",
    dependencies: [
      {
        name: "kube-state-metrics",
        version: "8.4.0",
        source: {
          repo: "prometheus-community/helm-charts",
          tag: "kube-state-metrics-8.4.0",
          commit: "1982f1c5828920f5d4ea5d04956169e81f8c5129",
          path: "charts/kube-state-metrics",
        },
      },
      {
        name: "prometheus-node-exporter",
        version: "4.56.1",
        source: {
          repo: "prometheus-community/helm-charts",
          tag: "prometheus-node-exporter-4.56.1",
          commit: "8b8e639cac80a3001412f187060068978f649a55",
          path: "charts/prometheus-node-exporter",
        },
      },
      {
        name: "grafana",
        version: "12.11.1",
        source: { repo: "grafana-community/helm-charts", tag: "grafana-12.11.1", commit: "864f7794683680e5100a38670e103c4fa6e37e29", path: "charts/grafana" },
      },
    ],
    drop: ["prometheus-windows-exporter"],
  },
  {
    file: "gitea",
    chart: "gitea",
    version: "10.6.0",
    source: {
      repo: "Venthe/gitea-helm-chart",
      upstream: "https://gitea.com/gitea/helm-chart (not on GitHub; this repository carries its history and tags)",
      tag: "v10.6.0",
      commit: "7b892431d6eb961f963dbd5ffca7cf6e28c33c0e",
      path: ".",
    },
    release: "gitea",
    namespace: "gitea",
    setVersion: "10.6.0",
    dependencies: [
      {
        name: "postgresql-ha",
        version: "14.2.16",
        source: { repo: "bitnami/charts", tag: "postgresql-ha/14.2.16", commit: "1cf7a3ad0fbd2a9e3d08dc315d741b14261b2f5a", path: "bitnami/postgresql-ha" },
        dependencies: [bitnamiCommon("2.20.5", "2b78e137ac278cdf9d54523e8d37833a4ff0cd5b")],
      },
      {
        name: "redis-cluster",
        version: "10.3.0",
        source: { repo: "bitnami/charts", tag: "redis-cluster/10.3.0", commit: "879530fe23bd410471024c57f15dae27266913fb", path: "bitnami/redis-cluster" },
        dependencies: [bitnamiCommon("2.20.5", "2b78e137ac278cdf9d54523e8d37833a4ff0cd5b")],
      },
    ],
    drop: ["postgresql", "redis"],
  },
  {
    file: "mlflow",
    chart: "mlflow",
    version: "1.11.5",
    source: { repo: "community-charts/helm-charts", tag: "mlflow-1.11.5", commit: "9d23d003453a3d863d2086691a26250921fd1169", path: "charts/mlflow" },
    release: "mlflow",
    namespace: "mlflow",
    dependencies: [],
    drop: ["postgresql", "mysql", "minio"],
  },
  {
    file: "marquez",
    chart: "marquez",
    version: "0.51.1",
    source: { repo: "MarquezProject/marquez", tag: "0.51.1", commit: "27a4a1357d9078bc4e6738524dfe5ba9d77aa2df", path: "chart" },
    release: "marquez",
    namespace: "marquez",
    dependencies: [bitnamiCommon("2.1.2", "638a48e4d3ec7b5d160f4b525ec40218512c464b")],
    drop: ["postgresql"],
  },
  {
    file: "kubernetes-dashboard",
    chart: "kubernetes-dashboard",
    version: "7.13.0",
    source: {
      repo: "kubernetes/dashboard",
      tag: "kubernetes-dashboard-7.13.0",
      commit: "010e944dd3b68fd895abea9e588f09663dbf16a9",
      path: "charts/kubernetes-dashboard",
    },
    release: "kubernetes-dashboard",
    namespace: "kubernetes-dashboard",
    dependencies: [
      {
        name: "kong",
        version: "2.46.0",
        source: { repo: "Kong/charts", tag: "kong-2.46.0", commit: "a3dbcd3fef696ce0080fb94ad6e4083ebfd5333b", path: "charts/kong" },
        drop: ["postgresql"],
      },
    ],
    drop: ["nginx", "ingress-nginx", "cert-manager", "metrics-server"],
  },
  {
    // Not a UI: the CNI's own agents on the host network (what `exposure drift` and the guard
    // meet in kube-system), with the values the bench stack gives the release (mode l4).
    file: "cilium",
    chart: "cilium",
    version: "1.18.11",
    source: { module: "github.com/cilium/cilium", version: "v1.18.11", path: "install/kubernetes/cilium" },
    values: {
      kubeProxyReplacement: true,
      k8sServiceHost: "192.0.2.10",
      k8sServicePort: 6443,
      gatewayAPI: { enabled: false },
      l2announcements: { enabled: false },
      enableLBIPAM: false,
      nodePort: { enabled: true },
    },
    release: "cilium",
    namespace: "kube-system",
    dependencies: [],
    drop: [],
    notes: [
      "The stacks pin 1.18.12, which the Go module proxy refuses (403); 1.18.11's values.yaml differs from",
      "1.18.12's (shared/reference/cilium/1.18.12) only in image tags and digests. Values: the bench stack's l4",
      "values (src/core/cilium/values.ts), with a documentation address (192.0.2.10) as k8sServiceHost.",
    ],
  },
];

const KUBE_VERSION = "1.37.2";
const WORKLOAD_KINDS = new Set(["Deployment", "StatefulSet", "DaemonSet"]);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === "object" && !Array.isArray(v);

function git(mirror: string, args: string[]): Buffer {
  return execFileSync("git", ["-C", mirror, ...args], { maxBuffer: 512 * 1024 * 1024 });
}

function mirrorOf(root: string, repo: string): string {
  const dir = path.join(root, repo.replace("/", "+"), "repo");
  if (!fs.existsSync(dir)) throw new Error(`no mirror of ${repo} at ${dir}: bring it with the fetch tool (github:${repo})`);
  return dir;
}

/** Extracts `source.path` at `source.commit` into `dest` (dest is the chart folder itself). */
function checkout(root: string, source: Source, dest: string): void {
  const mirror = mirrorOf(root, source.repo);
  const tagged = git(mirror, ["rev-parse", `${source.tag}^{commit}`])
    .toString()
    .trim();
  if (tagged !== source.commit) throw new Error(`${source.repo}: tag ${source.tag} is ${tagged}, expected ${source.commit}`);
  // The chart's own tree only: the mirrors may lack large blobs elsewhere in the repository.
  const tree = source.path === "." ? source.commit : `${source.commit}:${source.path}`;
  fs.mkdirSync(dest, { recursive: true });
  const tar = path.join(path.dirname(dest), `.${path.basename(dest)}.tar`);
  fs.writeFileSync(tar, git(mirror, ["archive", "--format=tar", tree]));
  execFileSync("tar", ["-xf", tar, "-C", dest]);
  fs.rmSync(tar);
}

/** Removes `drop` from Chart.yaml's dependencies and checks that every other one is provided. */
function editChartYaml(dir: string, drop: readonly string[], provided: readonly Dependency[], setVersion?: string): void {
  const file = path.join(dir, "Chart.yaml");
  const doc = parseDocument(fs.readFileSync(file, "utf8"));
  const chart = doc.toJS() as { name: string; dependencies?: { name: string; alias?: string; version: string }[] };
  const deps = chart.dependencies ?? [];
  const keep = deps.filter((d) => !drop.includes(d.alias ?? d.name) && !drop.includes(d.name));
  for (const d of keep) {
    const local = fs.existsSync(path.join(dir, "charts", d.name));
    const p = provided.find((x) => x.name === d.name);
    if (!local && !p) throw new Error(`${chart.name}: dependency ${d.name} ${d.version} is neither vendored, provided nor dropped`);
    if (p && !versionMatches(d.version, p.version)) throw new Error(`${chart.name}: dependency ${d.name} wants ${d.version}, provided ${p.version}`);
  }
  for (const name of drop) {
    if (!deps.some((d) => d.name === name || d.alias === name)) throw new Error(`${chart.name}: no dependency ${name} to drop`);
  }
  if (deps.length) doc.set("dependencies", keep);
  if (keep.length === 0) doc.delete("dependencies");
  if (setVersion) doc.set("version", setVersion);
  fs.writeFileSync(file, doc.toString());
  // The lock file would list what was dropped; helm only warns about it, but it is not ours to keep.
  fs.rmSync(path.join(dir, "Chart.lock"), { force: true });
}

/** Exact versions, "2.x.x" or "~2.x" style ranges as the bitnami charts write them. */
function versionMatches(wanted: string, provided: string): boolean {
  if (wanted === provided) return true;
  const w = wanted.replace(/^[~^]/, "").split(".");
  const p = provided.split(".");
  return w.every((part, i) => part === "x" || part === "*" || part === p[i] || (i > 0 && wanted.startsWith("^")));
}

function place(root: string, parent: string, dep: Dependency): void {
  const dest = path.join(parent, "charts", dep.name);
  fs.rmSync(dest, { recursive: true, force: true });
  checkout(root, dep.source, dest);
  for (const sub of dep.dependencies ?? []) place(root, dest, sub);
  editChartYaml(dest, dep.drop ?? [], dep.dependencies ?? []);
}

/** What ui-exposure reads of a pod template: labels, host network, and each container's ports. */
function trimTemplate(template: Obj): Obj {
  const meta = isObj(template.metadata) ? template.metadata : {};
  const spec = isObj(template.spec) ? template.spec : {};
  const containers = (list: unknown) =>
    (Array.isArray(list) ? list : []).filter(isObj).map((c) => ({ name: c.name, ...(Array.isArray(c.ports) && c.ports.length ? { ports: c.ports } : {}) }));
  const out: Obj = {};
  if (spec.hostNetwork !== undefined) out.hostNetwork = spec.hostNetwork;
  const init = containers(spec.initContainers);
  if (init.some((c) => "ports" in c)) out.initContainers = init;
  out.containers = containers(spec.containers);
  return { metadata: { ...(isObj(meta.labels) ? { labels: meta.labels } : {}) }, spec: out };
}

/** helm writes an empty value (`targetPort:`) where a template found none: the API server stores it as absent. */
function dropNulls(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(dropNulls);
  if (!isObj(v)) return v;
  return Object.fromEntries(Object.entries(v).flatMap(([k, x]) => (x === null || x === undefined ? [] : [[k, dropNulls(x)]])));
}

function trim(obj: Obj, namespace: string): Obj | undefined {
  const kind = obj.kind as string;
  const meta = isObj(obj.metadata) ? obj.metadata : {};
  const metadata = {
    name: meta.name,
    // helm install -n puts every namespaced object without one in the release namespace.
    namespace: meta.namespace ?? namespace,
    ...(isObj(meta.labels) ? { labels: meta.labels } : {}),
  };
  const spec = isObj(obj.spec) ? obj.spec : {};
  if (kind === "Service") return { apiVersion: obj.apiVersion, kind, metadata, spec };
  if (!WORKLOAD_KINDS.has(kind)) return undefined;
  return {
    apiVersion: obj.apiVersion,
    kind,
    metadata,
    spec: {
      ...(spec.replicas !== undefined ? { replicas: spec.replicas } : {}),
      selector: spec.selector,
      template: trimTemplate(isObj(spec.template) ? spec.template : {}),
    },
  };
}

function describeSource(s: Source | ModuleSource): string {
  if ("module" in s) return `Go module ${s.module}@${s.version}, ${s.path} (through the Go module proxy)`;
  return `${s.repo}${s.path === "." ? "" : `/${s.path}`} @ ${s.tag} (${s.commit})`;
}

/** Copies a chart out of a Go module (downloaded by `go mod download`, checked against go.sum's hash). */
function checkoutModule(source: ModuleSource, dest: string): void {
  const info = JSON.parse(
    execFileSync("go", ["mod", "download", "-json", `${source.module}@${source.version}`], { env: { ...process.env, GOFLAGS: "-mod=mod" } }).toString(),
  ) as {
    Dir?: string;
    Error?: string;
  };
  if (!info.Dir) throw new Error(`go mod download ${source.module}@${source.version}: ${info.Error ?? "no directory"}`);
  fs.cpSync(path.join(info.Dir, source.path), dest, { recursive: true });
  // The module cache is read-only.
  execFileSync("chmod", ["-R", "u+w", dest]);
}

function header(spec: ChartSpec, helmVersion: string): string {
  const lines = [
    "Rendered by scripts/render-charts.sh: do not edit (run it again).",
    `chart: ${spec.chart} ${spec.version}`,
    `source: ${describeSource(spec.source)}`,
    ...("upstream" in spec.source && spec.source.upstream ? [`upstream: ${spec.source.upstream}`] : []),
  ];
  const walk = (deps: readonly Dependency[], indent: string) => {
    for (const d of deps) {
      lines.push(`${indent}subchart ${d.name} ${d.version}: ${describeSource(d.source)}`);
      if (d.drop?.length) lines.push(`${indent}  (its ${d.drop.join(", ")}: disabled by default, not rendered)`);
      walk(d.dependencies ?? [], `${indent}  `);
    }
  };
  walk(spec.dependencies, "");
  if (spec.drop.length) lines.push(`dependencies disabled by default, not rendered: ${spec.drop.join(", ")}`);
  if (spec.setVersion) lines.push(`Chart.yaml's version in git is a placeholder; set to ${spec.setVersion} as the release job does`);
  lines.push(
    `command: helm template ${spec.release} <chart> --namespace ${spec.namespace} --kube-version ${KUBE_VERSION} (helm ${helmVersion}, ${spec.values ? `default values and -f ${JSON.stringify(spec.values)}` : "default values"})`,
    "kept: Services, and Deployments/StatefulSets/DaemonSets trimmed to selector, replicas and pod template (labels, hostNetwork, container names and ports)",
    ...(spec.notes ?? []),
  );
  return lines.map((l) => `# ${l}`).join("\n");
}

function render(helm: string, root: string, out: string, spec: ChartSpec): void {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), `render-${spec.file}-`));
  try {
    const dir = path.join(work, spec.chart);
    if ("module" in spec.source) checkoutModule(spec.source, dir);
    else checkout(root, spec.source, dir);
    for (const dep of spec.dependencies) place(root, dir, dep);
    editChartYaml(dir, spec.drop, spec.dependencies, spec.setVersion);
    const valuesFile = path.join(work, "values.json");
    if (spec.values) fs.writeFileSync(valuesFile, JSON.stringify(spec.values));
    const args = ["template", spec.release, dir, "--namespace", spec.namespace, "--kube-version", KUBE_VERSION, ...(spec.values ? ["-f", valuesFile] : [])];
    const rendered = execFileSync(helm, args, {
      maxBuffer: 256 * 1024 * 1024,
      env: { ...process.env, HELM_CACHE_HOME: path.join(work, "cache"), HELM_CONFIG_HOME: path.join(work, "config"), HELM_DATA_HOME: path.join(work, "data") },
    }).toString();
    const items: Obj[] = [];
    for (const doc of parseAllDocuments(rendered)) {
      if ("errors" in doc && doc.errors.length) throw new Error(`${spec.file}: helm output does not parse: ${doc.errors[0]?.message}`);
      const obj = doc.toJS() as unknown;
      if (!isObj(obj)) continue;
      const kept = trim(obj, spec.namespace);
      if (kept) items.push(dropNulls(kept) as Obj);
    }
    const order = (o: Obj) => `${o.kind === "Service" ? 0 : 1}/${(o.metadata as Obj).namespace}/${(o.metadata as Obj).name}/${o.kind}`;
    items.sort((a, b) => order(a).localeCompare(order(b)));
    const body = stringify({ apiVersion: "v1", kind: "List", items }, { lineWidth: 0 });
    fs.writeFileSync(path.join(out, `${spec.file}.yaml`), `${header(spec, helmVersion(helm))}\n${body}`);
    console.error(`render-charts: ${spec.file}: ${items.length} objects`);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

function helmVersion(helm: string): string {
  return execFileSync(helm, ["version", "--template", "{{.Version}}"]).toString().trim();
}

function main(): void {
  const [helm, out, ...only] = process.argv.slice(2);
  if (!helm || !out) {
    console.error("usage: render-charts.ts HELM OUT_DIR [chart-file...]");
    process.exit(EXIT.INVALID);
  }
  const root = process.env.RENDER_CHARTS_MIRRORS ?? "/work/.mirror";
  fs.mkdirSync(out, { recursive: true });
  for (const spec of CHARTS) {
    if (only.length && !only.includes(spec.file)) continue;
    render(helm, root, out, spec);
  }
}

main();
