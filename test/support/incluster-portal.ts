// The in-cluster portal run the way its pod runs it, for the e2e files: the platform with the
// portal enabled, the files of the ConfigMap `up` shipped, the Deployment's container, a token of
// its ServiceAccount and the API server's CA at the in-pod paths. Those paths
// (/var/run/secrets/kubernetes.io/serviceaccount) are provided in a private mount namespace
// (`unshare --mount`, root), so the bundle runs unchanged and the host's /run is never touched.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { type Cluster, EXAMPLE_UIS, startPlatform } from "./harness";
import { PORTAL_E2E_CONTRACT } from "./portal-fixtures";

export const PORTAL_NS = "platform-portal";
export const PORTAL_LABEL = "app.kubernetes.io/name=ui-exposure-portal";

/**
 * One Ready node, Argo CD and Grafana as their charts install them, and a stack publishing them
 * and the portal (PORTAL_E2E_CONTRACT as contract/`contractFile`), with `stack` added.
 */
export async function startPortalPlatform(node: { name: string; ip: string }, contractFile: string, stack: Record<string, unknown> = {}) {
  const platform = await startPlatform({
    nodes: [{ ...node, ready: true }],
    uis: [EXAMPLE_UIS.argocd, EXAMPLE_UIS.grafana],
    stack: {
      "kubernetes:context": "e2e",
      "ui-exposure:contract": `contract/${contractFile}`,
      "ui-exposure:entries": ["argocd", "grafana", "portal"],
      "ui-exposure:cilium": { mode: "cohabit" },
      // No kubelet here: nothing would ever become Ready during `up`.
      "ui-exposure:portal": { enabled: true, skipAwait: true },
      ...stack,
    },
  });
  fs.writeFileSync(path.join(platform.sandbox.dir, "contract", contractFile), PORTAL_E2E_CONTRACT);
  return platform;
}

/** The portal's ConfigMaps; the files of the one holding the code are written to `dir`, byte for byte. */
export async function writeShippedFiles(cluster: Cluster, dir: string) {
  const maps = await cluster.core.listNamespacedConfigMap({ namespace: PORTAL_NS, labelSelector: PORTAL_LABEL });
  const code = maps.items.find((m) => m.binaryData);
  fs.mkdirSync(dir);
  for (const [name, text] of Object.entries(code?.data ?? {})) fs.writeFileSync(path.join(dir, name), text);
  for (const [name, b64] of Object.entries(code?.binaryData ?? {})) fs.writeFileSync(path.join(dir, name), Buffer.from(b64, "base64"));
  return maps.items;
}

/** The portal Deployment's pod template: its container and its ServiceAccount. */
export async function portalPodSpec(cluster: Cluster) {
  const kc = new cluster.lib.KubeConfig();
  kc.loadFromFile(cluster.kubeconfig);
  const deployments = await kc.makeApiClient(cluster.lib.AppsV1Api).listNamespacedDeployment({ namespace: PORTAL_NS, labelSelector: PORTAL_LABEL });
  const pod = deployments.items[0]?.spec?.template.spec;
  return { container: pod?.containers[0], account: pod?.serviceAccountName as string };
}

/**
 * What the kubelet gives the pod: a token of `account` (TokenRequest), the API server's CA and
 * the namespace in `home`/serviceaccount, and the container's environment (its literal values,
 * KUBERNETES_SERVICE_HOST/PORT; SA_DIR for runInPod).
 */
export async function podIdentity(cluster: Cluster, account: string, container: { env?: { name: string; value?: string }[] } | undefined, home: string) {
  const minted = await cluster.core.createNamespacedServiceAccountToken({
    namespace: PORTAL_NS,
    name: account,
    body: { spec: { audiences: ["https://kubernetes.default.svc"], expirationSeconds: 3600 } },
  });
  const token = minted.status?.token as string;
  const ca = fs.readFileSync(path.join(cluster.dir, "pki", "apiserver.crt"));
  const sa = path.join(home, "serviceaccount");
  fs.mkdirSync(sa);
  fs.writeFileSync(path.join(sa, "token"), token ?? "", { mode: 0o600 });
  fs.writeFileSync(path.join(sa, "ca.crt"), ca);
  fs.writeFileSync(path.join(sa, "namespace"), PORTAL_NS);
  const api = new URL(cluster.server);
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, KUBERNETES_SERVICE_HOST: api.hostname, KUBERNETES_SERVICE_PORT: api.port, SA_DIR: sa };
  for (const v of container?.env ?? []) if (v.value !== undefined) env[v.name] = v.value;
  return { token, ca, env };
}

/** `node <app>/portal.js` as the pod runs it: `env`, and SA_DIR's files at the in-pod paths. */
export function runInPod(app: string, env: NodeJS.ProcessEnv): { child: ChildProcess; stderr: () => string } {
  const script = [
    "mount -t tmpfs tmpfs /run",
    "mkdir -p /run/secrets/kubernetes.io/serviceaccount",
    'cp "$SA_DIR"/token "$SA_DIR"/ca.crt "$SA_DIR"/namespace /run/secrets/kubernetes.io/serviceaccount/',
    `exec ${JSON.stringify(process.execPath)} ${JSON.stringify(path.join(app, "portal.js"))}`,
  ].join(" && ");
  const check = spawnSync("unshare", ["--mount", "--propagation", "private", "true"]);
  if (check.status !== 0) throw new Error(`this e2e needs root and unshare(1) for a private mount namespace: ${check.stderr}`);
  const child = spawn("unshare", ["--mount", "--propagation", "private", "sh", "-c", script], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return { child, stderr: () => stderr };
}
