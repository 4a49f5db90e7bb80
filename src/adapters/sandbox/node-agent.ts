// The sandbox's node: one long-running process that plays the kubelet's part for the sandbox
// node (src/adapters/datapath/kubelet.ts, NodeAgent) and outlives `sandbox up`:
//   node node-agent.ts CONFIG.json
// With the data path (mode kube-proxy) it first starts it (the node's network namespace,
// kube-proxy, the host's link) and runs every pod bound to the node as a namespace and a server;
// in forwarder mode (no network namespaces here) a pod gets an address and its status only (the
// sandbox's own servers answer the URLs). It writes `ready.json` next to CONFIG once it follows
// the node's pods, and stops following on SIGTERM (what it started is `sandbox down`'s to remove).
import * as fs from "node:fs";
import * as path from "node:path";
import { EXIT } from "../../core/findings";
import { DataPath, dataPathSupport } from "../datapath/datapath";
import { NodeAgent, type PodRuntime, writeNode } from "../datapath/kubelet";
import { SANDBOX_NODE } from "./cluster";

export interface NodeAgentConfig {
  kubeconfig: string;
  mode: "kube-proxy" | "forwarder";
  /** The toolchain's bin folder (kube-proxy). */
  bin: string;
  apiPort: number;
  tls?: { certFile: string; keyFile: string };
  /** Where the data path run's prefix is written as soon as it exists (for `sandbox down`). */
  dataPathFile: string;
  /** Written once the agent follows the node's pods: { nodeIp, prefix? }. */
  readyFile: string;
  /** The sandbox's id, recorded in the data path run (its owner tag). */
  id: string;
  /** The node it plays (the second cluster's, forwarder mode only); else SANDBOX_NODE. */
  node?: { name: string; ip: string };
}

export interface NodeAgentReady {
  nodeIp: string;
  prefix?: string;
}

/** Pods that only need an address (forwarder mode): 10.244.0.<n>, numbers reused once free. */
export function addressOnlyRuntime(): PodRuntime {
  const used = new Map<string, number>();
  return {
    start: async (pod) => {
      const taken = new Set(used.values());
      let n = 10;
      while (taken.has(n)) n++;
      if (n > 254) throw new Error("no pod address left on the sandbox node");
      used.set(pod.id, n);
      return { ip: `10.244.0.${n}` };
    },
    stop: async (id) => {
      used.delete(id);
    },
  };
}

async function main(configFile: string): Promise<void> {
  const config = JSON.parse(fs.readFileSync(configFile, "utf8")) as NodeAgentConfig;
  const say = (line: string) => process.stdout.write(`${new Date().toISOString()} ${line}\n`);
  const lib = await import("@kubernetes/client-node");
  const kc = new lib.KubeConfig();
  kc.loadFromFile(config.kubeconfig);
  const core = kc.makeApiClient(lib.CoreV1Api);
  let runtime: PodRuntime;
  const node = config.node ?? SANDBOX_NODE;
  let nodeIp = node.ip;
  let prefix: string | undefined;
  if (config.mode === "kube-proxy") {
    const support = dataPathSupport(config.bin);
    if (!support.ok) throw new Error(support.problems.map((p) => p.message).join("; "));
    const dp = await DataPath.start({
      nodes: [SANDBOX_NODE.name],
      operator: "host",
      detached: true,
      tag: config.id,
      kubeconfig: config.kubeconfig,
      apiPort: config.apiPort,
      tools: support.value,
      ...(config.tls ? { tls: config.tls } : {}),
      say,
      onStart: (p) => fs.writeFileSync(config.dataPathFile, p, { mode: 0o600 }),
      onNodes: async (nodes) => {
        for (const n of nodes) await writeNode(core, { name: n.name, ip: n.ip, ready: true });
      },
    });
    prefix = dp.prefix;
    nodeIp = dp.node(SANDBOX_NODE.name).ip;
    runtime = dp.runtime();
  } else {
    await writeNode(core, { name: node.name, ip: nodeIp, ready: true });
    runtime = addressOnlyRuntime();
  }
  const agent = new NodeAgent(lib, kc, [{ name: node.name, ip: nodeIp }], runtime, { say });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      void agent.stop().finally(() => process.exit(EXIT.OK));
    });
  }
  await agent.start();
  const ready: NodeAgentReady = { nodeIp, ...(prefix ? { prefix } : {}) };
  fs.writeFileSync(config.readyFile, JSON.stringify(ready), { mode: 0o600 });
  say(`node agent: following the pods of ${node.name} (${nodeIp})`);
}

if (require.main === module) {
  const [configFile] = process.argv.slice(2);
  if (!configFile) {
    process.stderr.write("usage: node-agent.ts CONFIG.json\n");
    process.exit(EXIT.INVALID);
  }
  main(path.resolve(configFile)).catch((err: Error) => {
    process.stderr.write(`node agent: ${err.message}\n`);
    process.exit(EXIT.ERROR);
  });
}
