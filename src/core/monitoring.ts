// The platform's Prometheus watching the exposure: the portal's /metrics, and what `ui-exposure:monitoring` adds (ServiceMonitor, PrometheusRule, dashboard).

import { PORTAL_PORT_NAME, PORTAL_SELECTOR } from "./portal/spec";
import type { PortalView } from "./portal/view";
import { fnv1a } from "./text";

/** The metric names: an interface users build on (docs/monitoring.md). */
export const METRICS = {
  entryUp: "ui_exposure_entry_up",
  entryVerdict: "ui_exposure_entry_verdict",
  readyEndpoints: "ui_exposure_entry_ready_endpoints",
  nodePort: "ui_exposure_entry_node_port",
  probeDuration: "ui_exposure_entry_probe_duration_seconds",
  undeclared: "ui_exposure_undeclared_exposures",
  lastObservation: "ui_exposure_last_observation_timestamp_seconds",
  auditSuccess: "ui_exposure_audit_success",
  auditLastSuccess: "ui_exposure_audit_last_success_timestamp_seconds",
  buildInfo: "ui_exposure_build_info",
} as const;

const HELP = {
  undeclared: "Exposures (NodePort or LoadBalancer Services, hostPorts) that neither the contract nor the allowlist declares, as exposure drift reports them.",
  auditSuccess: "1 when the portal's last audit round read the cluster, 0 when it failed (the undeclared count is then the last good one).",
  auditLastSuccess: "Unix time of the portal's last audit round that read the cluster (0 before the first).",
  lastObservation: "Unix time of the portal's last successful cluster read (0 before the first).",
};

export interface MetricFamily {
  name: string;
  help: string;
  samples: { labels: Record<string, string>; value: number }[];
}

export interface MetricsInput {
  /** The last view the portal computed; undefined when no cluster read has succeeded yet. */
  view?: PortalView;
  /** When that view's cluster read finished (the freshness gauge; 0 when never). */
  observedAt?: Date;
  /** When the portal runs the audit: the last good undeclared count, whether the last round read the cluster, when one last did. */
  audit?: { undeclared?: number; ok?: boolean; lastSuccessAt?: Date } | undefined;
  version: string;
  stack: string;
  /** The cluster's name (ClusterReader.name): a kube context's, never a URL or a credential. */
  cluster: string;
}

/** One scrape's samples, of one stack or several: each labelled with its stack and cluster (two stacks never share a series), never with a URL or a reason. */
export function metricFamilies(inputs: readonly MetricsInput[]): MetricFamily[] {
  const families = new Map<string, MetricFamily>();
  for (const f of inputs.flatMap(stackFamilies)) families.set(f.name, { ...f, samples: [...(families.get(f.name)?.samples ?? []), ...f.samples] });
  return [...families.values()];
}

function stackFamilies(input: MetricsInput): MetricFamily[] {
  const { audit, stack, cluster } = input;
  const published = (input.view?.entries ?? []).filter((e) => e.exposed && e.verdict !== "NOT-EXPOSED");
  const up: MetricFamily["samples"] = [];
  const verdict: MetricFamily["samples"] = [];
  const ready: MetricFamily["samples"] = [];
  const port: MetricFamily["samples"] = [];
  const duration: MetricFamily["samples"] = [];
  const of = { stack, cluster };
  const single = (name: string, help: string, value: number, labels: Record<string, string> = of) => ({ name, help, samples: [{ labels, value }] });
  for (const e of published) {
    const entry = { entry: e.name, ...of };
    // Probing off (PORTAL_PROBE=off): no series. On: an entry without an answer (no URL to probe: Service gone...) did not answer.
    if (input.view?.reachability.enabled) up.push({ labels: entry, value: e.reachability?.ok ? 1 : 0 });
    for (const v of ["match", "drift", "absent"]) verdict.push({ labels: { entry: e.name, verdict: v, ...of }, value: v === e.verdict.toLowerCase() ? 1 : 0 });
    ready.push({ labels: entry, value: e.readyEndpoints });
    const observed = e.nodePort ?? e.hostPort;
    if (observed !== undefined) port.push({ labels: entry, value: observed });
    if (e.reachability?.latencyMs != null) duration.push({ labels: entry, value: e.reachability.latencyMs / 1000 });
  }
  return [
    { name: METRICS.entryUp, help: "1 when the entry's published URL answered as the contract expects at the portal's last probe, 0 otherwise.", samples: up },
    { name: METRICS.entryVerdict, help: "The entry's verdict (as exposure status gives it): 1 for the current one of match, drift, absent.", samples: verdict },
    { name: METRICS.readyEndpoints, help: "Ready endpoints behind the entry's published Service (1 or 0 for a hostPort pod).", samples: ready },
    { name: METRICS.nodePort, help: "The port observed in the cluster for the entry (nodePort, or hostPort).", samples: port },
    { name: METRICS.probeDuration, help: "How long the portal's last probe of the entry's URL took, in seconds.", samples: duration },
    ...(audit?.undeclared === undefined ? [] : [single(METRICS.undeclared, HELP.undeclared, audit.undeclared)]),
    ...(audit?.ok === undefined ? [] : [single(METRICS.auditSuccess, HELP.auditSuccess, Number(audit.ok))]),
    ...(audit ? [single(METRICS.auditLastSuccess, HELP.auditLastSuccess, (audit.lastSuccessAt?.getTime() ?? 0) / 1000)] : []),
    single(METRICS.lastObservation, HELP.lastObservation, input.observedAt ? input.observedAt.getTime() / 1000 : 0),
    single(METRICS.buildInfo, "The portal's version (and, as on every series, the stack it watches); always 1.", 1, { version: input.version, ...of }),
  ];
}

/** The `job` label of the portal's scrape target: the Service label the ServiceMonitor names as jobLabel. */
export const PORTAL_JOB_LABEL = "app.kubernetes.io/name";
export const METRICS_PATH = "/metrics";

export interface MonitoringTarget {
  /** The in-cluster portal's namespace (where the objects go too). */
  namespace: string;
  /** The kube-prometheus-stack release: its Prometheus selects by `release: <release>`. */
  release: string;
  stack: string;
}

/** The series selector of this stack's portal, as its scrape config labels them. */
export const portalSelector = (t: Pick<MonitoringTarget, "namespace">): string => `job="${PORTAL_SELECTOR[PORTAL_JOB_LABEL]}",namespace="${t.namespace}"`;

/** A failed scrape or a portal rollout (new pod, new instance) must neither resolve an alert nor restart its `for`: rules read each series' last value within this window. */
export const SERIES_GAP_WINDOW = "2m";

/** What a portal's series are about, besides the portal (job, namespace): every series carries them (metricFamilies). */
const PER_STACK = ["stack", "cluster"];

/** The six alerts, each naming the command that explains it; all but PortalDown are per stack: one stack's failure fires alone, labelled with its stack. */
export function alertRules(t: MonitoringTarget) {
  const sel = portalSelector(t);
  // By what the alert is about: the scrape target's pod, instance, container, service, endpoint go.
  const last = (metric: string, by: string[], extra = "") =>
    `max by (${["namespace", "job", ...PER_STACK, ...by].join(", ")}) (last_over_time(${metric}{${sel}${extra}}[${SERIES_GAP_WINDOW}]))`;
  // The stack the series are of (this stack's, or another one this portal serves).
  const stack = "{{ $labels.stack }}";
  const alerts = [
    {
      alert: "UIExposureUnreachable",
      expr: `${last(METRICS.entryUp, ["entry"])} == 0`,
      for: "5m",
      summary: `The published URL of {{ $labels.entry }} (stack ${stack}) does not answer as the contract expects.`,
      description: `The portal's probe of {{ $labels.entry }}'s URL (http://<node IP>:<nodePort> plus the contract's probe path) has failed for 5 minutes. Run \`exposure probe --stack ${stack} --entry {{ $labels.entry }}\` for the answer, \`exposure status --stack ${stack} --entry {{ $labels.entry }}\` for the verdict.`,
    },
    {
      alert: "UIExposureDrift",
      expr: `${last(METRICS.entryVerdict, ["entry", "verdict"], ',verdict=~"drift|absent"')} == 1`,
      for: "10m",
      summary: `{{ $labels.entry }} (stack ${stack}) is {{ $labels.verdict }}: its published URL may be false.`,
      description: `The cluster no longer matches what the last \`up\` published for {{ $labels.entry }} (a port moved by hand, its Service gone, no ready endpoints...) for 10 minutes. Run \`exposure status --stack ${stack} --entry {{ $labels.entry }}\` for the reasons; \`pulumi up\` puts a moved port back.`,
    },
    {
      alert: "UIExposureUndeclared",
      expr: `${last(METRICS.undeclared, [])} > 0`,
      for: "15m",
      summary: `{{ $value }} exposure(s) in the cluster of stack ${stack} that neither the contract nor the allowlist declares.`,
      description: `A NodePort or LoadBalancer Service or a hostPort has been open for 15 minutes without a contract entry or an allowlist item. Run \`exposure drift --stack ${stack}\` to list them, then remove each one or declare it.`,
    },
    {
      alert: "UIExposureAuditFailing",
      expr: `${last(METRICS.auditSuccess, [])} == 0`,
      for: "15m",
      summary: `The portal's audit of stack ${stack} has not read the cluster for 15 minutes: UIExposureUndeclared sees an old count.`,
      description: `The portal's audit (every Service and Pod of the cluster, as \`exposure drift\` reads them) fails: a permission removed from its ServiceAccount, the lists above its read budget, a timeout. ${METRICS.undeclared} keeps its last good value, ${METRICS.auditLastSuccess} says since when. Its log says why; \`exposure drift --stack ${stack}\` audits with your own credentials.`,
    },
    {
      alert: "UIExposureStale",
      // 60 s without a read, then 9m: it fires once the last read is 10 minutes old.
      expr: `time() - ${last(METRICS.lastObservation, [])} > 60`,
      for: "9m",
      summary: `The portal has not read the cluster of stack ${stack} for more than 10 minutes.`,
      description: `The portal answers but its reads of that cluster fail (API server unreachable, its ServiceAccount's permissions...): the other alerts see old values. Its log says why; \`exposure status --stack ${stack}\` reads the cluster with your own credentials.`,
    },
    {
      alert: "UIExposurePortalDown",
      // Per portal (`up` has no stack label): down, or absent (a rollout's gap continues it) once Prometheus has scraped for a minute (at start all is absent).
      expr: `max by (namespace, job) (up{${sel}}) == 0 or (absent(up{${sel}}) and on () count(up offset 1m) > 0)`,
      for: "5m",
      summary: "Prometheus cannot scrape the ui-exposure portal in {{ $labels.namespace }}.",
      description: `No ui-exposure alert can fire while the portal is down. Check its pod (\`kubectl -n ${t.namespace} get pods -l app.kubernetes.io/name=ui-exposure-portal\`) and run \`exposure status --stack ${t.stack}\` meanwhile.`,
    },
  ];
  const rules = alerts.map(({ summary, description, ...rule }) => ({ ...rule, labels: { severity: "warning" }, annotations: { summary, description } }));
  return [{ name: "ui-exposure", rules }];
}

export type AlertRule = ReturnType<typeof alertRules>[number]["rules"][number];

/** The ServiceMonitor of the in-cluster portal: its Service `portal`, port `http`, /metrics. */
export function serviceMonitorSpec(t: MonitoringTarget) {
  return {
    jobLabel: PORTAL_JOB_LABEL,
    selector: { matchLabels: { ...PORTAL_SELECTOR, "app.kubernetes.io/part-of": "ui-exposure" } },
    namespaceSelector: { matchNames: [t.namespace] },
    endpoints: [{ port: PORTAL_PORT_NAME, path: METRICS_PATH, interval: "30s", scrapeTimeout: "10s" }],
  };
}

/** Every query of the dashboard (the promtool check wraps each as a recording rule): one value per stack of the `stack` variable, whichever pod served it. */
export function dashboardQueries(t: MonitoringTarget): { title: string; expr: string }[] {
  const stacks = `${portalSelector(t)},stack=~"$stack"`;
  const perStack = (metric: string, sel: string, by: string[] = []) => `max by (${[...PER_STACK, ...by].join(", ")}) (${metric}{${sel}})`;
  const sel = `${stacks},entry=~"$entry"`;
  return [
    { title: "Undeclared exposures", expr: perStack(METRICS.undeclared, stacks) },
    { title: "Observation age", expr: `time() - ${perStack(METRICS.lastObservation, stacks)}` },
    { title: "Up", expr: perStack(METRICS.entryUp, sel) },
    { title: "Verdict", expr: `${perStack(METRICS.entryVerdict, sel, ["verdict"])} == 1` },
    { title: "Probe latency", expr: perStack(METRICS.probeDuration, sel) },
    { title: "Port", expr: perStack(METRICS.nodePort, sel) },
  ];
}

/** The dashboard's uid: `ui-exposure-<stack>` where Grafana takes it (letters, digits, `-`, `_`, at most 40), else the stack with `_` for others, cut, and its hash. */
export function dashboardUid(stack: string): string {
  if (/^[A-Za-z0-9_-]{1,28}$/.test(stack)) return `ui-exposure-${stack}`;
  return `ui-exposure-${stack.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 19)}-${fnv1a(stack).toString(16).padStart(8, "0")}`;
}

/** The Grafana dashboard: the undeclared count and freshness on top, then one repeated row per entry; each panel one value per stack chosen. */
export function dashboard(t: MonitoringTarget): Record<string, unknown> {
  const q = Object.fromEntries(dashboardQueries(t).map((d) => [d.title, d.expr]));
  // Grafana's own variable syntax (the `datasource` variable below), not a template literal.
  const ds = { type: "prometheus", uid: ["$", "{datasource}"].join("") };
  let id = 0;
  const stat = (title: string, x: number, y: number, w: number, extra: Record<string, unknown> = {}) => ({
    id: ++id,
    type: "stat",
    title,
    datasource: ds,
    gridPos: { x, y, w, h: 4 },
    targets: [
      { refId: "A", datasource: ds, expr: q[title], instant: true, legendFormat: `{{stack}} ({{cluster}})${title === "Verdict" ? ": {{verdict}}" : ""}` },
    ],
    ...extra,
  });
  const redFromOne = [
    { color: "green", value: null },
    { color: "red", value: 1 },
  ];
  const config = (defaults: Record<string, unknown>) => ({ fieldConfig: { defaults, overrides: [] } });
  // Every one of the stacks or entries by default. The stack's All matches every series, the no-stack portal's (an empty stack, which label_values omits) too.
  const all = { includeAll: true, multi: true, current: { text: "All", value: "$__all" } };
  const variable = (name: string, query: string, extra = {}) => ({
    name,
    type: "query",
    datasource: ds,
    query: { query, refId: name },
    refresh: 2,
    ...all,
    ...extra,
  });
  return {
    title: `UI exposure (${t.stack})`,
    uid: dashboardUid(t.stack),
    tags: ["ui-exposure"],
    schemaVersion: 39,
    editable: false,
    time: { from: "now-6h", to: "now" },
    refresh: "30s",
    templating: {
      list: [
        { name: "datasource", type: "datasource", query: "prometheus", current: {}, hide: 0 },
        variable("stack", `label_values(${METRICS.buildInfo}{${portalSelector(t)}}, stack)`, { allValue: ".*" }),
        variable("entry", `label_values(${METRICS.entryVerdict}{${portalSelector(t)},stack=~"$stack"}, entry)`),
      ],
    },
    panels: [
      stat("Undeclared exposures", 0, 0, 12, config({ thresholds: { mode: "absolute", steps: redFromOne } })),
      stat("Observation age", 12, 0, 12, config({ unit: "s" })),
      { id: ++id, type: "row", title: "$entry", repeat: "entry", collapsed: false, gridPos: { x: 0, y: 4, w: 24, h: 1 }, panels: [] },
      stat("Up", 0, 5, 6, config({ mappings: [{ type: "value", options: { "1": { text: "UP", color: "green" }, "0": { text: "DOWN", color: "red" } } }] })),
      stat("Verdict", 6, 5, 6, { options: { textMode: "name", colorMode: "background" } }),
      stat("Probe latency", 12, 5, 6, config({ unit: "s" })),
      stat("Port", 18, 5, 6, config({ decimals: 0, unit: "none" })),
    ],
  };
}

export const MONITORING_GROUP_VERSION = "monitoring.coreos.com/v1";

/** The three objects, without names: components/monitoring.ts auto-names them (a fixed name could take over another's object). */
export function monitoringObjects(t: MonitoringTarget) {
  const labels = { release: t.release, "app.kubernetes.io/part-of": "ui-exposure", "app.kubernetes.io/managed-by": "ui-exposure" };
  const metadata = { namespace: t.namespace, labels };
  return {
    serviceMonitor: { apiVersion: MONITORING_GROUP_VERSION, kind: "ServiceMonitor", metadata, spec: serviceMonitorSpec(t) },
    prometheusRule: { apiVersion: MONITORING_GROUP_VERSION, kind: "PrometheusRule", metadata, spec: { groups: alertRules(t) } },
    dashboard: {
      apiVersion: "v1",
      kind: "ConfigMap",
      metadata: { ...metadata, labels: { ...labels, grafana_dashboard: "1" } },
      data: { "ui-exposure.json": JSON.stringify(dashboard(t), null, 2) },
    },
  };
}

/** The Prometheus Operator's resources the stack creates (CRDs installed by kube-prometheus-stack). */
export const MONITORING_RESOURCES = ["servicemonitors", "prometheusrules"] as const;

/** Why the stack cannot create its monitoring objects, from what the API serves; undefined when it can (or cannot tell). */
export function monitoringApiProblem(served: readonly string[] | undefined, source: string): string | undefined {
  if (served === undefined) return undefined;
  const missing = MONITORING_RESOURCES.filter((r) => !served.includes(r));
  if (missing.length === 0) return undefined;
  return `ui-exposure:monitoring: ${source} does not serve ${missing.join(" and ")} in ${MONITORING_GROUP_VERSION} (the Prometheus Operator's CRDs, installed by kube-prometheus-stack): install kube-prometheus-stack first, or set ui-exposure:monitoring.enabled to false`;
}
