// Shared by the operator-command tests (status, drift, probe, access): a throw-away project
// folder, a captured command context, and cluster objects. Fake nodes use 127.0.0.x
// addresses: no test ever contacts a non-loopback address.
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";
import type { Command, CommandContext } from "../../cli/context";
import { type Commands, main } from "../../cli/main";
import type { CommandName } from "../../cli/specs";
import { SnapshotReader } from "../../src/core/kube/cluster";
import { ENTRY_LABEL, type EndpointSlice, MANAGED_BY_LABEL, MANAGED_BY_VALUE, type Pod, type Secret, type Service } from "../../src/core/kube/types";
import { node, service, slice } from "./fixtures";

/** A contract exercising every kind of entry the operator commands handle. */
export const TEST_CONTRACT = `version: 1
endpoints:
  - name: argocd
    exposed: true
    scheme: http
    service: { namespace: argocd, name: argocd-server, port: http }
    probe: { path: /healthz, expectStatus: [200] }
    credentials:
      - label: Argo CD admin
        secret: { namespace: argocd, name: argocd-initial-admin-secret }
        username: admin
        passwordKey: password
  - name: gitea
    exposed: true
    scheme: http
    service: { namespace: gitea, name: gitea-http, port: http }
    credentials:
      - label: Gitea admin
        secret: { namespace: gitea, name: gitea-admin-secret }
        usernameKey: username
        passwordKey: password
  - name: grafana
    exposed: true
    scheme: http
    service: { namespace: monitoring, name: kube-prometheus-stack-grafana, port: http-web }
  - name: lineage-agent
    exposed: true
    scheme: http
    hostPort: { namespace: lineage, port: 8090, podSelector: { app: lineage-agent } }
  - name: postgres
    scheme: postgresql
    service: { namespace: data, name: postgres, port: postgresql }
    credentials:
      - label: Postgres role atlas
        secret: { namespace: data, name: postgres-atlas-role }
        usernameKey: username
        passwordKey: password
  - name: openlineage
    scheme: http
    service: { namespace: marquez, name: marquez, port: 5000 }
  - name: registry
    scheme: http
    service: { namespace: registry, name: registry, port: http }
`;

export interface TestProject {
  dir: string;
  remove(): void;
}

/** A project folder with one stack file per entry of `stacks` (config maps) and a contract. */
export function makeProject(stacks: Record<string, Record<string, unknown>>, contract = TEST_CONTRACT): TestProject {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-cmd-"));
  fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
  fs.mkdirSync(path.join(dir, "contract"));
  fs.writeFileSync(path.join(dir, "contract", "endpoints.yaml"), contract);
  for (const [name, config] of Object.entries(stacks)) {
    fs.writeFileSync(path.join(dir, `Pulumi.${name}.yaml`), stringify({ config }));
  }
  return { dir, remove: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** A stack whose config selects `entries` (default: every exposed entry). */
export function stackFile(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    "kubernetes:context": "test",
    "ui-exposure:cilium": { mode: "cohabit" },
    ...overrides,
  };
}

export interface Captured {
  ctx: CommandContext;
  out: string[];
  err: string[];
  /** Everything printed, stdout then stderr. */
  all(): string;
}

export function capture(projectDir: string, env: NodeJS.ProcessEnv = {}): Captured {
  const out: string[] = [];
  const err: string[] = [];
  return {
    ctx: { projectDir, stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } },
    out,
    err,
    all: () => [...out, ...err].join("\n"),
  };
}

/**
 * Runs `exposure <name> ...argv` through the real `main` (so UserError -> message + exit code
 * is what users get), with the command built by the test (fake cluster, fake runner).
 */
export async function runCommand<N extends CommandName>(name: N, run: Command<N>, argv: string[], captured: Captured): Promise<number> {
  return main([name, ...argv], captured.ctx, { [name]: run } as Partial<Commands>);
}

// Cluster objects shared with the core tests.
export { node, service, slice };

/** Our NodePort Service for an entry, as the program creates it. */
export function managedService(
  entry: string,
  namespace: string,
  nodePort: number,
  opts: { selector: Record<string, string>; targetPort: number | string; portName?: string; type?: string },
): Service {
  return service(namespace, `${entry}-nodeport`, {
    type: opts.type ?? "NodePort",
    selector: opts.selector,
    labels: { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, [ENTRY_LABEL]: entry },
    ports: [{ name: opts.portName ?? "http", port: 80, targetPort: opts.targetPort, nodePort, protocol: "TCP" }],
  });
}

export function pod(
  namespace: string,
  name: string,
  nodeName: string,
  opts: { labels?: Record<string, string>; hostPort?: number; ready?: boolean; phase?: string; hostNetwork?: boolean } = {},
): Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name, namespace, labels: opts.labels ?? {} },
    spec: {
      nodeName,
      ...(opts.hostNetwork ? { hostNetwork: true } : {}),
      containers: [{ name: "main", ports: [{ containerPort: opts.hostPort ?? 8080, ...(opts.hostPort ? { hostPort: opts.hostPort } : {}) }] }],
    },
    status: { phase: opts.phase ?? "Running", conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }] },
  };
}

export function secret(namespace: string, name: string, data: Record<string, string>): Secret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, namespace },
    type: "Opaque",
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, "utf8").toString("base64")])),
  };
}

/** Argo CD's ClusterIP Service, as its chart installs it. */
export const argocdServer = service("argocd", "argocd-server", {
  selector: { "app.kubernetes.io/name": "argocd-server" },
  ports: [{ name: "http", port: 80, targetPort: 8080 }],
});

/** The vendored Services of TEST_CONTRACT, as their charts install them. */
export const vendoredServices: Service[] = [
  argocdServer,
  service("gitea", "gitea-http", { selector: { "app.kubernetes.io/name": "gitea" }, ports: [{ name: "http", port: 3000, targetPort: 3000 }] }),
  service("monitoring", "kube-prometheus-stack-grafana", {
    selector: { "app.kubernetes.io/name": "grafana" },
    ports: [{ name: "http-web", port: 80, targetPort: 3000 }],
  }),
  service("data", "postgres", { selector: { app: "postgres" }, ports: [{ name: "postgresql", port: 5432, targetPort: 5432 }] }),
  service("marquez", "marquez", { selector: { app: "marquez" }, ports: [{ name: "http", port: 5000, targetPort: 5000 }] }),
  service("registry", "registry", { selector: { app: "registry" }, ports: [{ name: "http", port: 5000, targetPort: 5000 }] }),
];

/** Our NodePort Services for argocd, gitea and grafana, all healthy (nodePorts 31001-31003). */
export const managedServices: Service[] = [
  managedService("argocd", "argocd", 31001, { selector: { "app.kubernetes.io/name": "argocd-server" }, targetPort: 8080 }),
  managedService("gitea", "gitea", 31002, { selector: { "app.kubernetes.io/name": "gitea" }, targetPort: 3000 }),
  managedService("grafana", "monitoring", 31003, { selector: { "app.kubernetes.io/name": "grafana" }, targetPort: 3000 }),
];

export const readySlices: EndpointSlice[] = [
  slice("argocd", "argocd-nodeport", [true]),
  slice("gitea", "gitea-nodeport", [true]),
  slice("monitoring", "grafana-nodeport", [true]),
];

/** A healthy single-node cluster for TEST_CONTRACT (node IP 127.0.0.2). */
export function healthyCluster(extra: readonly unknown[] = []): unknown[] {
  return [
    node("bench", "127.0.0.2"),
    ...vendoredServices,
    ...managedServices,
    ...readySlices,
    pod("lineage", "lineage-agent-0", "bench", { labels: { app: "lineage-agent" }, hostPort: 8090 }),
    ...extra,
  ];
}

/** A snapshot reader over `objects`, exposing how many calls were made. */
export function snapshot(objects: readonly unknown[]): SnapshotReader {
  return new SnapshotReader(objects, "snapshot test");
}

/** A path the test servers never answer (the client must time out). */
export const HANG_PATH = "/hang";

export interface LocalServer {
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * A real HTTP(S) server on 127.0.0.1 answering `routes` (path -> status, optional Location);
 * HANG_PATH and "hang" routes accept the request and never answer; other paths answer 404.
 */
export async function startServer(
  routes: Record<string, { status: number; location?: string } | "hang">,
  tls?: { key: string; cert: string },
): Promise<LocalServer> {
  const hanging = new Set<http.ServerResponse>();
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const route = routes[req.url ?? "/"];
    if (req.url === HANG_PATH || route === "hang") {
      hanging.add(res);
      return;
    }
    res.writeHead(route?.status ?? 404, route?.location ? { location: route.location } : {});
    res.end("body");
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    url: `${tls ? "https" : "http"}://127.0.0.1:${port}`,
    port,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A loopback port nothing listens on (it was free a moment ago). */
/**
 * The first of `count` consecutive ports free on 127.0.0.1, below Linux's ephemeral range
 * (32768-60999): there, the connections other test files open in parallel cannot take one
 * between this check and its use, as they did with a range next to an ephemeral port.
 */
export async function freePortRange(count: number): Promise<number> {
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const server = net.createServer();
      server.once("error", () => resolve(false));
      server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = 20000 + Math.floor(Math.random() * 12000);
    let all = true;
    for (let p = base; p < base + count && all; p++) all = await free(p);
    if (all) return base;
  }
  throw new Error(`no ${count} consecutive free ports on 127.0.0.1 between 20000 and 32000`);
}

export async function closedPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
