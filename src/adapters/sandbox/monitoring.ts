// `exposure sandbox up --monitoring`: the platform's Prometheus, tried in the sandbox. The real
// server (the toolchain's `prometheus` stage) loads the alert rules the stack's PrometheusRule
// holds (alertRules(), the function components/monitoring.ts creates it from) and scrapes the
// sandbox's portal's /metrics with the labels the Prometheus Operator's job gives the in-cluster
// one; the Prometheus Operator's CRDs (from its Go module) go into the sandbox's API server, so
// that `pulumi up` with `ui-exposure:monitoring` on works there too.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import { parseAllDocuments, stringify } from "yaml";
import { UserError } from "../../core/errors";
import { EXIT } from "../../core/findings";
import { alertRules, METRICS_PATH, MONITORING_GROUP_VERSION, MONITORING_RESOURCES, PORTAL_JOB_LABEL } from "../../core/monitoring";
import { PORTAL_PORT_NAME, PORTAL_SELECTOR } from "../../core/portal/spec";
import { DEFAULT_PORTAL_NAMESPACE } from "../../core/settings";

type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});

export const OPERATOR_MODULE = "github.com/prometheus-operator/prometheus-operator@v0.85.0";

/** The ServiceMonitor and PrometheusRule CRDs of the operator's module (`go mod download`: the module cache, nothing committed). */
export function operatorCrds(env: NodeJS.ProcessEnv = process.env): Record<string, unknown>[] {
  const r = spawnSync("go", ["mod", "download", "-json", OPERATOR_MODULE], {
    cwd: os.tmpdir(),
    encoding: "utf8",
    env: { ...env, GOFLAGS: "-mod=mod", GOTOOLCHAIN: "local" },
    timeout: 300_000,
  });
  if (r.status !== 0)
    throw new Error(`go mod download ${OPERATOR_MODULE} failed (the Prometheus Operator's CRDs): ${(r.stderr || r.error?.message || "").trim().slice(0, 500)}`);
  const dir = (JSON.parse(r.stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${OPERATOR_MODULE}: no Dir in ${r.stdout.slice(0, 500)}`);
  return MONITORING_RESOURCES.flatMap((plural) =>
    parseAllDocuments(fs.readFileSync(path.join(dir, "example/prometheus-operator-crd", `monitoring.coreos.com_${plural}.yaml`), "utf8"))
      .map((d) => d.toJSON() as Record<string, unknown> | null)
      .filter((d): d is Record<string, unknown> => d !== null),
  );
}

/**
 * Creates the operator's CRDs in the cluster of `kubeconfig` (raw JSON, as `kubectl apply` sends
 * them: a typed client drops their x-kubernetes-* keys); one that exists is left as it is. Returns
 * once the API serves servicemonitors and prometheusrules.
 */
export async function installOperatorCrds(kubeconfig: string, crds: readonly Record<string, unknown>[]): Promise<void> {
  const lib: ClientNode = await import("@kubernetes/client-node");
  const kc = new lib.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const server = new URL(kc.getCurrentCluster()?.server ?? "");
  const request = async (method: "GET" | "POST", apiPath: string, body?: unknown) => {
    const options: https.RequestOptions = { method, host: server.hostname, port: server.port, path: apiPath, headers: {} };
    await kc.applyToHTTPSOptions(options);
    const data = body === undefined ? undefined : JSON.stringify(body);
    if (data) options.headers = { ...options.headers, "content-type": "application/json", "content-length": Buffer.byteLength(data) };
    return new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = https.request(options, (res) => {
        let text = "";
        res.on("data", (d: Buffer) => {
          if (text.length < 1_000_000) text += d.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.setTimeout(30_000, () => req.destroy(new Error(`${method} ${apiPath}: no answer within 30 s`)));
      req.on("error", reject);
      req.end(data);
    });
  };
  for (const crd of crds) {
    const r = await request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd);
    if (r.status !== 201 && r.status !== 409) throw new Error(`creating the Prometheus Operator's CRDs: ${r.status} ${r.text.slice(0, 300)}`);
  }
  const end = Date.now() + 60_000;
  for (;;) {
    const r = await request("GET", `/apis/${MONITORING_GROUP_VERSION}`);
    const served = r.status === 200 ? ((JSON.parse(r.text) as { resources?: { name?: string }[] }).resources ?? []).map((x) => x.name) : [];
    if (MONITORING_RESOURCES.every((x) => served.includes(x))) return;
    if (Date.now() > end) throw new Error(`the API server does not serve ${MONITORING_RESOURCES.join(" and ")} 60 s after their CRDs were created`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * EXPOSURE_SANDBOX_ALERT_FOR=<seconds>: every alert's `for` in the sandbox's copy of the rules, and
 * scrapes and rule evaluations every 5 s, to watch an alert go pending, firing and resolved in a
 * minute instead of the shipped rules' 5 to 15 (the only change to them). Unset: the rules as shipped.
 */
export const ALERT_FOR_VARIABLE = "EXPOSURE_SANDBOX_ALERT_FOR";

export function alertForSeconds(env: NodeJS.ProcessEnv): number | undefined {
  const raw = env[ALERT_FOR_VARIABLE];
  if (raw === undefined || raw === "") return undefined;
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 3600)
    throw new UserError(`${ALERT_FOR_VARIABLE} must be a whole number of seconds between 1 and 3600, not '${raw.slice(0, 40)}'`, EXIT.INVALID);
  return Number(raw);
}

/** The labels of the in-cluster portal's series (the operator's job for our ServiceMonitor), given to the sandbox's portal. */
export const SANDBOX_PORTAL_TARGET_LABELS = {
  namespace: DEFAULT_PORTAL_NAMESPACE,
  service: "portal",
  pod: "sandbox-portal",
  container: "portal",
  endpoint: PORTAL_PORT_NAME,
} as const;

/**
 * Writes `dir`/rules.yaml (the stack's alert rules; `for` as EXPOSURE_SANDBOX_ALERT_FOR says) and
 * `dir`/prometheus.yml (a scrape of the portal at `portal` every 30 s, the ServiceMonitor's
 * interval, or 5 s with the setting). Returns both paths.
 */
export function writePrometheusFiles(dir: string, portal: URL, stack: string, forSeconds: number | undefined): { config: string; rules: string } {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const groups = alertRules({ namespace: DEFAULT_PORTAL_NAMESPACE, release: "kube-prometheus-stack", stack }).map((g) => ({
    ...g,
    rules: g.rules.map((r) => (forSeconds === undefined ? r : { ...r, for: `${forSeconds}s` })),
  }));
  const rules = path.join(dir, "rules.yaml");
  fs.writeFileSync(rules, stringify({ groups }), { mode: 0o600 });
  const every = forSeconds === undefined ? "30s" : "5s";
  const config = path.join(dir, "prometheus.yml");
  fs.writeFileSync(
    config,
    stringify({
      global: { scrape_interval: every, evaluation_interval: every, scrape_timeout: forSeconds === undefined ? "10s" : "4s" },
      rule_files: [rules],
      scrape_configs: [
        {
          job_name: PORTAL_SELECTOR[PORTAL_JOB_LABEL],
          metrics_path: METRICS_PATH,
          static_configs: [{ targets: [portal.host], labels: SANDBOX_PORTAL_TARGET_LABELS }],
        },
      ],
    }),
    { mode: 0o600 },
  );
  return { config, rules };
}

/**
 * Prometheus's command line for these files, its data in `dir`/data, listening on a port of its own choosing on 127.0.0.1
 * (port 0), which it announces in its log (announcedPrometheus): no port is picked before it starts, for anything to take.
 */
export function prometheusArgs(files: { config: string }, dir: string): string[] {
  return [
    `--config.file=${files.config}`,
    `--storage.tsdb.path=${path.join(dir, "data")}`,
    "--storage.tsdb.retention.time=1d",
    "--web.listen-address=127.0.0.1:0",
  ];
}

/** The address in Prometheus's log line `msg="Listening on" component=web address=127.0.0.1:PORT`, as a URL. */
export function prometheusListening(line: string): string | undefined {
  const m = /msg="Listening on" component=web address=127\.0\.0\.1:(\d{1,5})(?:\s|$)/.exec(line);
  return m && Number(m[1]) > 0 && Number(m[1]) < 65536 ? `http://127.0.0.1:${m[1]}/` : undefined;
}

/**
 * Whether the Prometheus at `url` is the one started with `rulesFile` and already scrapes the
 * portal: its rule group comes from that very file (another server on that port has not), and
 * the portal's `up` is 1.
 */
export async function prometheusReady(url: string, rulesFile: string): Promise<boolean> {
  const api = async <T>(p: string): Promise<T | undefined> => {
    try {
      const res = await fetch(new URL(`api/v1/${p}`, url), { signal: AbortSignal.timeout(2000) });
      const body = (await res.json()) as { status?: string; data?: T };
      return body.status === "success" ? body.data : undefined;
    } catch {
      return undefined;
    }
  };
  const rules = await api<{ groups: { name: string; file: string }[] }>("rules");
  if (!rules?.groups.some((g) => g.name === "ui-exposure" && g.file === rulesFile)) return false;
  const up = await api<{ result: { value: [number, string] }[] }>(`query?query=${encodeURIComponent(`up{job="${PORTAL_SELECTOR[PORTAL_JOB_LABEL]}"}`)}`);
  return up?.result[0]?.value[1] === "1";
}
