// The sandbox's cluster: the e2e loopback control plane (scripts/e2e-cluster.sh) in the sandbox
// folder (with kube-scheduler), with what a real platform would have for the contract: each
// exposed UI's vendored ClusterIP Service and a one-replica Deployment behind it (the scheduler
// binds its pod, the node agent runs it, the controller manager builds its EndpointSlice), the
// Secrets the contract names for `exposure access`, and cilium-config.
import { spawnSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Contract, Endpoint } from "../../core/contract/schema";
import { type HttpGet, httpGet } from "../http-probe";
import { isPid, liveProcess } from "../own-process";

type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});

/** The node the stand-in pods run on; its InternalIP is the address of every sandbox URL. */
export const SANDBOX_NODE = { name: "sandbox-node", ip: "127.0.0.11" };
export const SANDBOX_CONTEXT = "sandbox";
/** `sandbox up --second`: a second control plane in its own folder, its own node and context, under its own stack. */
export const SECOND = { stack: "sandbox-second", context: "sandbox-second", dir: "cluster-second", node: { name: "sandbox-node-second", ip: "127.0.0.12" } };

export interface ControlPlane {
  dir: string;
  /** Kubeconfig written in the sandbox folder, context `sandbox` (or the second's). */
  kubeconfig: string;
  server: string;
}

/** Starts etcd + kube-apiserver + kube-controller-manager + kube-scheduler in `dir` (scripts/e2e-cluster.sh). */
export function startControlPlane(
  projectDir: string,
  bin: string,
  dir: string,
  kubeconfigOut: string,
  env: NodeJS.ProcessEnv = process.env,
  context = SANDBOX_CONTEXT,
): ControlPlane {
  const r = spawnSync(path.join(projectDir, "scripts/e2e-cluster.sh"), ["start", dir], {
    encoding: "utf8",
    env: { ...env, E2E_BIN: bin, E2E_SCHEDULER: "1" },
    timeout: 240_000,
  });
  if (r.status !== 0) throw new Error(`the loopback control plane did not start:\n${(r.stderr ?? "").trim().split("\n").slice(-15).join("\n")}`);
  const vars = new Map(
    r.stdout
      .split("\n")
      .filter((l) => l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1).replace(/^['"]|['"]$/g, "")] as const),
  );
  const source = vars.get("KUBECONFIG");
  if (!source) throw new Error("scripts/e2e-cluster.sh start printed no KUBECONFIG");
  // Same cluster and credentials, under the context name the sandbox stack names.
  const text = fs.readFileSync(source, "utf8").replace(/\b(name|cluster|current-context): e2e$/gm, `$1: ${context}`);
  fs.writeFileSync(kubeconfigOut, text, { mode: 0o600 });
  const server = /server:\s*(\S+)/.exec(text)?.[1] ?? "";
  return { dir, kubeconfig: kubeconfigOut, server };
}

/**
 * Starts again, on `dir`'s own data, certificates, token and ports (scripts/e2e-cluster.sh
 * restart), each control-plane process that is gone: the API server comes back at the address
 * the kubeconfig names, over the same etcd. Undefined when done; else why it could not be.
 */
export function restartControlPlane(projectDir: string, bin: string, dir: string, env: NodeJS.ProcessEnv): string | undefined {
  const r = spawnSync(path.join(projectDir, "scripts/e2e-cluster.sh"), ["restart", dir], { encoding: "utf8", env: { ...env, E2E_BIN: bin }, timeout: 240_000 });
  if (r.status === 0) return undefined;
  const lines = (r.stderr ?? "").trim().split("\n");
  return (lines.filter((l) => l.includes("ERROR: ")).pop() ?? (lines.pop() || r.error?.message || `exit code ${r.status}`)).slice(0, 300);
}

/** Stops the control plane in `dir` (scripts/e2e-cluster.sh stop); returns `role (pid)` of each process it stopped (not those already gone). */
export function stopControlPlane(projectDir: string, bin: string, dir: string): string[] {
  if (!fs.existsSync(path.join(dir, ".e2e-cluster"))) return [];
  const r = spawnSync(path.join(projectDir, "scripts/e2e-cluster.sh"), ["stop", dir], {
    encoding: "utf8",
    env: { ...process.env, E2E_BIN: bin },
    timeout: 60_000,
  });
  return [...(r.stderr ?? "").matchAll(/\] stopped ([a-z-]+) \((\d+)\)$/gm)].map((m) => `${m[1]} (${m[2]})`);
}

/** The control plane's processes and whether its API server answers, for `sandbox status`. */
export interface ControlPlaneStatus {
  processes: { role: string; pid: number; running: boolean }[];
  /** GET <server>/readyz: answers with any HTTP status; `detail` says ready (200) or the status, or why nothing answered. */
  apiServer: { url: string; answers: boolean; detail: string };
}

export const CONTROL_PLANE_ROLES = ["etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler"] as const;

/**
 * What scripts/e2e-cluster.sh started in `dir` (its `pids` and `starts` files, untrusted: a
 * process counts as running only when it is the one recorded, by the script's own rule: one line
 * for its role, the recorded start time, a command line naming `dir`) and whether the API
 * server of `kubeconfig` answers /readyz. Undefined when `dir` holds no control plane. Reads
 * only: nothing here signals a process.
 */
export async function controlPlaneStatus(dir: string, kubeconfig: string, get: HttpGet = httpGet): Promise<ControlPlaneStatus | undefined> {
  if (!fs.existsSync(path.join(dir, ".e2e-cluster"))) return undefined;
  const read = (file: string) => {
    try {
      return fs.statSync(file).size <= 64 * 1024 ? fs.readFileSync(file, "utf8") : "";
    } catch {
      return "";
    }
  };
  // name=value lines; a role given twice is nobody's (the script then signals neither).
  const records = (file: string) => {
    const lines = read(path.join(dir, file))
      .split("\n")
      .map((l) => /^([a-z-]+)=(\d{1,20})$/.exec(l.trim()))
      .filter((m): m is RegExpExecArray => m !== null);
    const seen = new Map<string, string[]>();
    for (const m of lines) seen.set(m[1] as string, [...(seen.get(m[1] as string) ?? []), m[2] as string]);
    return seen;
  };
  const pids = records("pids");
  const starts = records("starts");
  const processes = CONTROL_PLANE_ROLES.filter((role) => pids.has(role)).map((role) => {
    const [pidText, twice] = pids.get(role) as string[];
    const pid = Number(pidText);
    const start = starts.get(role);
    const live = isPid(pid) && twice === undefined && start?.length === 1 ? liveProcess(pid) : undefined;
    // The one recorded: its start time (a reused pid differs) and a command line naming `dir`.
    const running = live !== undefined && live.startTime === start?.[0] && live.args.some((a) => a.includes(dir));
    return { role, pid, running };
  });
  const server = /^\s*server:\s*(\S+)\s*$/m.exec(read(kubeconfig))?.[1] ?? "";
  let url: URL | undefined;
  try {
    url = new URL("/readyz", server);
  } catch {}
  // Only the loopback API server the sandbox started is ever asked.
  if (url?.protocol !== "https:" || !/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(url.hostname)) {
    return { processes, apiServer: { url: server.slice(0, 100), answers: false, detail: "no loopback https:// server in the sandbox kubeconfig" } };
  }
  const base = `${url.protocol}//${url.host}`;
  try {
    const r = await get(url, 2000);
    // Any HTTP answer means it is alive (a 401 or a 500 while starting too); only silence is "dead".
    return { processes, apiServer: { url: base, answers: true, detail: r.status === 200 ? "ready" : `/readyz answered HTTP ${r.status}` } };
  } catch (err) {
    return { processes, apiServer: { url: base, answers: false, detail: (err as Error).message } };
  }
}

const conflictIsFine = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
};

/** Labels of an entry's stand-in pods (and its vendored Service's selector). */
const podLabels = (e: Endpoint) => ({ "app.kubernetes.io/name": e.name, "app.kubernetes.io/part-of": "ui-exposure-sandbox" });

/** The image of every stand-in: the data path's pod server (src/adapters/datapath/pod-server.ts), its args the listeners. */
export const STAND_IN_IMAGE = "sandbox.invalid/pod-server:1";

/** Where an entry's stand-in runs: the Deployment (named after the entry) in its Service's namespace. */
export function standInDeployment(e: Endpoint): { namespace: string; name: string } | undefined {
  return e.service ? { namespace: e.service.namespace, name: e.name } : undefined;
}

/**
 * Installs what the contract expects to find, creating only what is missing (a second run after
 * a hand deletion puts the stand-in back, and changes nothing else). Vendored Services for every
 * entry that names one (exposed or not, so `exposure access` shows their in-cluster address), a
 * one-replica Deployment behind each exposed one, a Secret per declared credential with a random
 * password, and `kube-system/cilium-config`. Each is a create: what exists (409) is left as it is,
 * never replaced. Returns what it created.
 */
export async function seedCluster(kubeconfig: string, contract: Contract, exposedEntries: readonly Endpoint[]): Promise<string[]> {
  const lib: ClientNode = await import("@kubernetes/client-node");
  const kc = new lib.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const core = kc.makeApiClient(lib.CoreV1Api);
  const apps = kc.makeApiClient(lib.AppsV1Api);
  const created: string[] = [];
  const create = async (what: string, p: Promise<unknown>) => {
    try {
      await p;
      created.push(what);
    } catch (err) {
      if ((err as { code?: number }).code !== 409) throw err;
    }
  };

  const namespaces = new Set<string>(["kube-system"]);
  const ensureNamespace = async (ns: string) => {
    if (namespaces.has(ns)) return;
    namespaces.add(ns);
    await conflictIsFine(core.createNamespace({ body: { metadata: { name: ns } } }));
    await conflictIsFine(core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: "default" } } }));
  };

  const exposed = new Set(exposedEntries.map((e) => e.name));
  for (const e of contract.endpoints) {
    if (!e.service) continue;
    await ensureNamespace(e.service.namespace);
    const portName = typeof e.service.port === "string" ? e.service.port : e.scheme === "https" ? "https" : "http";
    const port = typeof e.service.port === "number" ? e.service.port : e.scheme === "https" ? 443 : 80;
    const targetPort = e.scheme === "https" ? 8443 : 8080;
    await create(
      `Service ${e.service.namespace}/${e.service.name}`,
      core.createNamespacedService({
        namespace: e.service.namespace,
        body: {
          metadata: { name: e.service.name, labels: { "app.kubernetes.io/managed-by": "Helm" } },
          spec: { type: "ClusterIP", selector: podLabels(e), ports: [{ name: portName, port, targetPort, protocol: "TCP" }] },
        },
      }),
    );
    const deployment = standInDeployment(e);
    if (!exposed.has(e.name) || !deployment) continue;
    await create(
      `Deployment ${deployment.namespace}/${deployment.name}`,
      apps.createNamespacedDeployment({
        namespace: deployment.namespace,
        body: {
          metadata: { name: deployment.name, labels: podLabels(e) },
          spec: {
            replicas: 1,
            selector: { matchLabels: podLabels(e) },
            template: {
              metadata: { labels: podLabels(e) },
              spec: {
                automountServiceAccountToken: false,
                containers: [
                  {
                    name: "ui",
                    image: STAND_IN_IMAGE,
                    args: [`${targetPort}${e.scheme === "https" ? "/tls" : ""}`],
                    ports: [{ containerPort: targetPort, name: portName, protocol: "TCP" }],
                  },
                ],
              },
            },
          },
        },
      }),
    );
  }

  // One Secret per declared credential; several credentials may share a Secret (other keys).
  const secrets = new Map<string, { namespace: string; name: string; data: Record<string, string> }>();
  for (const e of contract.endpoints) {
    for (const c of e.credentials ?? []) {
      const key = `${c.secret.namespace}/${c.secret.name}`;
      const s = secrets.get(key) ?? { namespace: c.secret.namespace, name: c.secret.name, data: {} };
      if (c.usernameKey) s.data[c.usernameKey] = "sandbox-admin";
      s.data[c.passwordKey] = crypto.randomBytes(12).toString("base64url");
      secrets.set(key, s);
    }
  }
  for (const s of secrets.values()) {
    await ensureNamespace(s.namespace);
    await create(
      `Secret ${s.namespace}/${s.name}`,
      core.createNamespacedSecret({ namespace: s.namespace, body: { metadata: { name: s.name }, type: "Opaque", stringData: s.data } }),
    );
  }

  // The cohabit guard reads it: kube-proxy replacement is what serves NodePorts on a real node.
  await create(
    "ConfigMap kube-system/cilium-config",
    core.createNamespacedConfigMap({
      namespace: "kube-system",
      body: { metadata: { name: "cilium-config" }, data: { "kube-proxy-replacement": "true", "enable-lb-ipam": "false" } },
    }),
  );
  return created;
}
