// A real Prometheus for the monitoring e2e: the server built by the toolchain's `prometheus`
// stage, the Prometheus Operator's CRDs from its Go module, and the scrape configuration the
// operator generates from a ServiceMonitor (pkg/prometheus/promcfg.go of v0.85.0,
// generateServiceMonitorConfig, endpointslice role), so that the target is found the way the
// platform's Prometheus finds it: the Service's labels, the named port, the EndpointSlice.
import { type ChildProcess, spawn } from "node:child_process";
import * as path from "node:path";

/** The ServiceMonitor and PrometheusRule CRDs of the operator's module: what `sandbox up --monitoring` installs too. */
export { OPERATOR_MODULE, operatorCrds } from "../../src/adapters/sandbox/monitoring";

export interface ServiceMonitor {
  metadata: { name: string; namespace: string };
  spec: {
    jobLabel?: string;
    selector: { matchLabels: Record<string, string> };
    namespaceSelector: { matchNames: string[] };
    endpoints: { port: string; path?: string; interval?: string; scrapeTimeout?: string }[];
  };
}

const sanitize = (name: string) => name.replace(/[^a-zA-Z0-9_]/g, "_");
/** Prometheus's relabel reference to the first group (its syntax, not a template literal). */
const FIRST_GROUP = ["$", "{1}"].join("");

/**
 * The scrape job the operator writes for endpoint `i` of a ServiceMonitor (matchLabels only,
 * endpointslice role), discovering through `kubeconfig`. `interval` overrides the endpoint's
 * (the e2e shortens it).
 */
export function operatorScrapeConfig(sm: ServiceMonitor, i: number, kubeconfig: string, interval?: string): Record<string, unknown> {
  const ep = sm.spec.endpoints[i];
  if (!ep) throw new Error(`ServiceMonitor ${sm.metadata.name} has no endpoint ${i}`);
  const target = ["__meta_kubernetes_endpointslice_address_target_kind", "__meta_kubernetes_endpointslice_address_target_name"];
  return {
    job_name: `serviceMonitor/${sm.metadata.namespace}/${sm.metadata.name}/${i}`,
    honor_labels: false,
    kubernetes_sd_configs: [{ role: "endpointslice", kubeconfig_file: kubeconfig, namespaces: { names: sm.spec.namespaceSelector.matchNames } }],
    scrape_interval: interval ?? ep.interval ?? "30s",
    ...(ep.scrapeTimeout && !interval ? { scrape_timeout: ep.scrapeTimeout } : {}),
    metrics_path: ep.path ?? "/metrics",
    relabel_configs: [
      { source_labels: ["job"], target_label: "__tmp_prometheus_job_name" },
      ...Object.keys(sm.spec.selector.matchLabels)
        .sort()
        .map((k) => ({
          action: "keep",
          source_labels: [`__meta_kubernetes_service_label_${sanitize(k)}`, `__meta_kubernetes_service_labelpresent_${sanitize(k)}`],
          regex: `(${sm.spec.selector.matchLabels[k]});true`,
        })),
      { action: "keep", source_labels: ["__meta_kubernetes_endpointslice_port_name"], regex: ep.port },
      { source_labels: [...target], separator: ";", regex: "Node;(.*)", replacement: FIRST_GROUP, target_label: "node" },
      { source_labels: [...target], separator: ";", regex: "Pod;(.*)", replacement: FIRST_GROUP, target_label: "pod" },
      { source_labels: ["__meta_kubernetes_namespace"], target_label: "namespace" },
      { source_labels: ["__meta_kubernetes_service_name"], target_label: "service" },
      { source_labels: ["__meta_kubernetes_pod_name"], target_label: "pod" },
      { source_labels: ["__meta_kubernetes_pod_container_name"], target_label: "container" },
      { action: "drop", source_labels: ["__meta_kubernetes_pod_phase"], regex: "(Failed|Succeeded)" },
      { source_labels: ["__meta_kubernetes_service_name"], target_label: "job", replacement: FIRST_GROUP },
      ...(sm.spec.jobLabel
        ? [{ source_labels: [`__meta_kubernetes_service_label_${sanitize(sm.spec.jobLabel)}`], target_label: "job", regex: "(.+)", replacement: FIRST_GROUP }]
        : []),
      { target_label: "endpoint", replacement: ep.port },
    ],
  };
}

export interface RunningPrometheus {
  url: string;
  child: ChildProcess;
  log: () => string;
  /** GET on the HTTP API; the parsed `data`. */
  api<T>(pathAndQuery: string): Promise<T>;
  stop(): Promise<void>;
}

/** Starts `prometheus` with this configuration file on 127.0.0.1:port; resolves once /-/ready answers. */
export async function startPrometheus(bin: string, configFile: string, dir: string, port: number): Promise<RunningPrometheus> {
  const child = spawn(
    bin,
    [`--config.file=${configFile}`, `--storage.tsdb.path=${path.join(dir, "data")}`, `--web.listen-address=127.0.0.1:${port}`, "--log.level=info"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let log = "";
  child.stdout?.on("data", (d: Buffer) => {
    log += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    log = (log + d.toString()).slice(-200_000);
  });
  const url = `http://127.0.0.1:${port}`;
  const end = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`prometheus exited (${child.exitCode}):\n${log.slice(-3000)}`);
    const ok = await fetch(`${url}/-/ready`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > end) throw new Error(`prometheus not ready after 60 s:\n${log.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 300));
  }
  return {
    url,
    child,
    log: () => log,
    api: async <T>(p: string) => {
      const res = await fetch(`${url}/api/v1/${p}`);
      const body = (await res.json()) as { status: string; data: T; error?: string };
      if (body.status !== "success") throw new Error(`prometheus ${p}: ${body.error}`);
      return body.data;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
