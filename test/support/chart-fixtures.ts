// The upstream charts rendered by scripts/render-charts.sh (test/data/charts), as objects, and
// the pods a cluster would run from their pod templates.
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import type { ContainerPort, Pod, Service } from "../../src/core/kube/types";

export const CHARTS_DIR = path.resolve(__dirname, "..", "data", "charts");

export interface PodTemplate {
  metadata: { labels?: Record<string, string> };
  spec: {
    hostNetwork?: boolean;
    containers: { name: string; ports?: ContainerPort[] }[];
    initContainers?: { name: string; ports?: ContainerPort[] }[];
  };
}

export interface Workload {
  kind: "Deployment" | "StatefulSet" | "DaemonSet";
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: { replicas?: number; selector: { matchLabels?: Record<string, string> }; template: PodTemplate };
}

export interface ChartFixture {
  file: string;
  /** "argo-cd 10.1.1", from the file's header. */
  chart: string;
  services: Service[];
  workloads: Workload[];
}

export function readChartFixture(file: string): ChartFixture {
  const text = fs.readFileSync(path.join(CHARTS_DIR, file), "utf8");
  const chart = /^# chart: (.+)$/m.exec(text)?.[1];
  if (!chart) throw new Error(`${file}: no '# chart:' header`);
  const list = parse(text) as { items: (Service | Workload)[] };
  return {
    file,
    chart,
    services: list.items.filter((o): o is Service => o.kind === "Service"),
    workloads: list.items.filter((o): o is Workload => o.kind !== "Service"),
  };
}

export function readAllChartFixtures(): ChartFixture[] {
  return fs
    .readdirSync(CHARTS_DIR)
    .filter((f) => f.endsWith(".yaml"))
    .sort()
    .map(readChartFixture);
}

/** A short, stable stand-in for the hash a controller puts in a pod's name. */
function suffix(text: string, length: number): string {
  let h = 2166136261;
  for (const c of text) h = Math.imul(h ^ c.charCodeAt(0), 16777619) >>> 0;
  const alphabet = "bcdfghjklmnpqrstvwxz2456789";
  let out = "";
  for (let i = 0; i < length; i++) {
    out += alphabet[h % alphabet.length];
    h = Math.floor(h / alphabet.length) + i * 7919;
  }
  return out;
}

/**
 * The running pods of a workload, as the API server stores them: named as the controllers
 * name them, one per node for a DaemonSet, and with the defaulting that matters here: on the
 * host network every containerPort is also a hostPort.
 */
export function podsOf(w: Workload, nodes: readonly string[]): Pod[] {
  const t = w.spec.template;
  const hostNetwork = t.spec.hostNetwork === true;
  const ports = (list: readonly { name: string; ports?: ContainerPort[] }[] | undefined) =>
    list?.map((c) => ({
      name: c.name,
      ...(c.ports
        ? { ports: c.ports.map((p) => ({ ...p, protocol: p.protocol ?? "TCP", ...(hostNetwork && !p.hostPort ? { hostPort: p.containerPort } : {}) })) }
        : {}),
    }));
  const names =
    w.kind === "DaemonSet"
      ? nodes.map((n) => `${w.metadata.name}-${suffix(w.metadata.name + n, 5)}`)
      : w.kind === "StatefulSet"
        ? Array.from({ length: w.spec.replicas ?? 1 }, (_, i) => `${w.metadata.name}-${i}`)
        : Array.from({ length: w.spec.replicas ?? 1 }, (_, i) => `${w.metadata.name}-${suffix(w.metadata.name, 10)}-${suffix(w.metadata.name + i, 5)}`);
  return names.map((name, i) => {
    const nodeName = w.kind === "DaemonSet" ? (nodes[i] as string) : (nodes[i % nodes.length] as string);
    const init = ports(t.spec.initContainers);
    return {
      apiVersion: "v1",
      kind: "Pod",
      metadata: { name, namespace: w.metadata.namespace, ...(t.metadata.labels ? { labels: { ...t.metadata.labels } } : {}) },
      spec: {
        nodeName,
        ...(hostNetwork ? { hostNetwork: true } : {}),
        containers: ports(t.spec.containers) ?? [],
        ...(init ? { initContainers: init } : {}),
      } as Pod["spec"],
      status: { phase: "Running", conditions: [{ type: "Ready", status: "True" }] },
    };
  });
}
