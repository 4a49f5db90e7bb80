// Cluster objects for tests. Fake nodes use 127.0.0.x addresses (never a routable one).
import { parseContract } from "../../src/core/contract/parse";
import type { ConfigMap, EndpointSlice, Node, Pod, Service, ServicePort } from "../../src/core/kube/types";
import { checkSettings, type Settings, stackConfigError } from "../../src/core/settings";

/** The settings of a stack (checkSettings), or the error naming every problem. */
export function parseSettings(config: Readonly<Record<string, string>>, stackFile: string, positions: Readonly<Record<string, string>> = {}): Settings {
  const checked = checkSettings(config, positions);
  if (checked.settings) return checked.settings;
  throw stackConfigError(stackFile, checked.problems, checked.missing);
}

export function node(name: string, ip: string | undefined, ready = true): Node {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name },
    status: {
      addresses: ip ? [{ type: "InternalIP", address: ip }] : [{ type: "Hostname", address: name }],
      conditions: [{ type: "Ready", status: ready ? "True" : "Unknown" }],
    },
  };
}

export function service(
  namespace: string,
  name: string,
  opts: { selector?: Record<string, string>; ports?: ServicePort[]; type?: string; labels?: Record<string, string> } = {},
): Service {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace, ...(opts.labels ? { labels: opts.labels } : {}) },
    spec: {
      type: opts.type ?? "ClusterIP",
      ...(opts.selector ? { selector: opts.selector } : {}),
      ports: opts.ports ?? [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }],
    },
  };
}

export function pod(
  namespace: string,
  name: string,
  nodeName: string,
  opts: { labels?: Record<string, string>; hostPort?: number; ready?: boolean; phase?: string } = {},
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: opts.labels ?? {} },
    spec: { nodeName, containers: [{ name: "main", ports: [{ containerPort: 8080, ...(opts.hostPort ? { hostPort: opts.hostPort } : {}) }] }] },
    status: { phase: opts.phase ?? "Running", conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }] },
  };
}

export function slice(namespace: string, serviceName: string, ready: boolean[]): EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${serviceName}-abcde`, namespace, labels: { "kubernetes.io/service-name": serviceName } },
    endpoints: ready.map((r, i) => ({ addresses: [`10.244.0.${i + 10}`], conditions: { ready: r } })),
  };
}

export function ciliumConfig(data: Record<string, string>): ConfigMap {
  return { apiVersion: "v1", kind: "ConfigMap", metadata: { name: "cilium-config", namespace: "kube-system" }, data };
}

/** The three bench UIs as their charts install them. */
export const benchServices: Service[] = [
  service("argocd", "argocd-server", {
    selector: { "app.kubernetes.io/name": "argocd-server" },
    ports: [
      { name: "http", port: 80, targetPort: 8080, protocol: "TCP" },
      { name: "https", port: 443, targetPort: 8080, protocol: "TCP" },
    ],
  }),
  service("gitea", "gitea-http", {
    selector: { "app.kubernetes.io/name": "gitea", "app.kubernetes.io/instance": "gitea" },
    ports: [{ name: "http", port: 3000, targetPort: 3000, protocol: "TCP" }],
  }),
  service("monitoring", "kube-prometheus-stack-grafana", {
    selector: { "app.kubernetes.io/name": "grafana", "app.kubernetes.io/instance": "kube-prometheus-stack" },
    ports: [{ name: "http-web", port: 80, targetPort: 3000, protocol: "TCP" }],
  }),
];

/** Flat Pulumi config of a test stack, as the engine hands it to the program. */
export function stackConfig(overrides: Record<string, unknown> = {}): Record<string, string> {
  const base: Record<string, unknown> = {
    "kubernetes:context": "test",
    "ui-exposure:entries": ["argocd", "gitea", "grafana"],
    "ui-exposure:cilium": { mode: "cohabit" },
    ...overrides,
  };
  return Object.fromEntries(
    Object.entries(base)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
  );
}

/** The message a contract text is refused with (the test fails if it is accepted). */
export function contractError(text: string): string {
  try {
    parseContract(text, "c.yaml");
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error("the contract was accepted");
}
