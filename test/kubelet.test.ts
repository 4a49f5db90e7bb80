// The node agent (src/adapters/datapath/kubelet.ts) against a small in-memory Pods API: what it
// runs, the status it writes (as `kubectl get pods` reads it), and how it completes a deletion.
// The real API server, scheduler and ReplicaSets are the e2e's (test/e2e/sandbox.e2e.ts).
import * as http from "node:http";
import type * as net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { NodeAgent, type PodRuntime, type PodToRun, podToRun } from "../src/adapters/datapath/kubelet";
import { fakeKubeconfig } from "./support/fake-api";

type Pod = {
  metadata: { namespace: string; name: string; uid: string; deletionTimestamp?: string };
  spec: { nodeName?: string; containers: { name: string; image: string; args?: string[]; ports?: { containerPort: number; hostPort?: number }[] }[] };
  status?: Record<string, unknown>;
};

/** Pods in memory: list (fieldSelector spec.nodeName), read, status replace, delete (grace 0 with a uid precondition removes). */
async function podsApi(pods: Pod[]) {
  const deletes: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    let body = "";
    req.on("data", (d: Buffer) => {
      body += d.toString();
    });
    req.on("end", () => {
      const send = (status: number, value: unknown) => res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(value));
      // A watch that sends no event: the agent's passes come from reconcile() here.
      if (url.searchParams.get("watch") === "true") return void res.writeHead(200, { "content-type": "application/json" }).flushHeaders();
      if (url.pathname === "/api/v1/pods") {
        const node = /^spec\.nodeName=(.*)$/.exec(url.searchParams.get("fieldSelector") ?? "")?.[1];
        return send(200, { kind: "PodList", apiVersion: "v1", metadata: {}, items: pods.filter((p) => p.spec.nodeName === node) });
      }
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)(\/status)?$/.exec(url.pathname);
      const pod = m && pods.find((p) => p.metadata.namespace === m[1] && p.metadata.name === m[2]);
      if (!m || !pod) return send(404, { kind: "Status", apiVersion: "v1", code: 404, reason: "NotFound" });
      if (req.method === "GET") return send(200, { kind: "Pod", apiVersion: "v1", ...pod });
      if (req.method === "PUT" && m[3]) {
        pod.status = (JSON.parse(body) as Pod).status;
        return send(200, pod);
      }
      if (req.method === "DELETE") {
        const opts = JSON.parse(body || "{}") as { gracePeriodSeconds?: number; preconditions?: { uid?: string } };
        deletes.push(`${pod.metadata.name} grace=${opts.gracePeriodSeconds} uid=${opts.preconditions?.uid}`);
        if (opts.preconditions?.uid !== pod.metadata.uid) return send(409, { kind: "Status", apiVersion: "v1", code: 409, reason: "Conflict" });
        pods.splice(pods.indexOf(pod), 1);
        return send(200, pod);
      }
      send(405, {});
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  const sockets = new Set<net.Socket>();
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  return {
    url,
    deletes,
    close: () => {
      for (const s of sockets) s.destroy();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const pod = (name: string, uid: string, node: string | undefined, container: Partial<Pod["spec"]["containers"][number]> = {}): Pod => ({
  metadata: { namespace: "ui", name, uid },
  spec: {
    ...(node ? { nodeName: node } : {}),
    containers: [{ name: "ui", image: "e2e.invalid/pod-server:1", ports: [{ containerPort: 8080 }], ...container }],
  },
});

/** A runtime that records what it starts and stops, and hands out 10.0.0.<n>. */
function recordingRuntime() {
  const log: string[] = [];
  let n = 0;
  const runtime: PodRuntime = {
    start: async (p: PodToRun) => {
      log.push(
        `start ${p.id} ${p.listeners.map((l) => `${l.port}${l.tls ? "/tls" : ""}`).join(",")}${p.hostPorts.length ? ` hostPorts ${p.hostPorts.map((h) => h.hostPort)}` : ""}`,
      );
      return { ip: `10.0.0.${++n}` };
    },
    stop: async (id) => {
      log.push(`stop ${id}`);
    },
  };
  return { runtime, log };
}

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function agentOn(pods: Pod[]) {
  const api = await podsApi(pods);
  const lib = await import("@kubernetes/client-node");
  const kc = new lib.KubeConfig();
  kc.loadFromString(fakeKubeconfig(api.url));
  const { runtime, log } = recordingRuntime();
  const agent = new NodeAgent(lib, kc, [{ name: "node-a", ip: "198.18.0.11" }], runtime, { resyncMs: 60_000 });
  cleanup.push(async () => {
    await agent.stop();
    await api.close();
  });
  await agent.start();
  return { agent, log, api };
}

describe("podToRun: what a pod's containers serve", () => {
  it("the container's args are its listeners; without args, its TCP ports over plain http; hostPorts kept", () => {
    const p = pod("a", "1", "node-a", { args: ["8443/tls", "9090"], ports: [{ containerPort: 8443, hostPort: 443 }] });
    expect(podToRun(p as never)).toEqual({
      id: "ui/a",
      node: "node-a",
      listeners: [
        { port: 8443, tls: true },
        { port: 9090, tls: false },
      ],
      hostPorts: [{ hostPort: 443, containerPort: 8443 }],
    });
    expect(podToRun(pod("b", "2", "node-a") as never)).toMatchObject({ listeners: [{ port: 8080, tls: false }] });
    expect(podToRun(pod("c", "3", "node-a", { args: ["--verbose"] }) as never)).toEqual({
      id: "ui/c",
      problem: "container ui: argument '--verbose' is not a listener (PORT or PORT/tls)",
    });
  });
});

describe("NodeAgent", () => {
  it("runs the pods bound to its node only, and writes their status as a kubelet does (READY 1/1, podIP)", async () => {
    const pods = [pod("bound", "u1", "node-a", { args: ["8080"] }), pod("elsewhere", "u2", "node-b"), pod("pending", "u3", undefined)];
    const { agent, log } = await agentOn(pods);
    expect(log).toEqual(["start ui/bound 8080"]);
    expect(agent.runningPods()).toEqual(["ui/bound"]);
    const status = pods[0]?.status as {
      phase: string;
      podIP: string;
      hostIP: string;
      conditions: { type: string; status: string }[];
      containerStatuses: { name: string; ready: boolean; started: boolean; state: { running?: unknown } }[];
    };
    expect(status).toMatchObject({ phase: "Running", podIP: "10.0.0.1", hostIP: "198.18.0.11" });
    expect(status.conditions.filter((c) => c.type === "Ready" || c.type === "ContainersReady").map((c) => c.status)).toEqual(["True", "True"]);
    expect(status.containerStatuses.map((c) => [c.name, c.ready, c.started, c.state.running !== undefined])).toEqual([["ui", true, true, true]]);
    expect(pods[1]?.status).toBeUndefined();
    // Nothing changed: a second pass starts nothing again.
    await agent.reconcile();
    expect(log).toEqual(["start ui/bound 8080"]);
  });

  it("a pod being deleted is stopped and its deletion completed (grace 0, its own uid); a pod removed by force is stopped", async () => {
    const pods = [pod("a", "u1", "node-a"), pod("b", "u2", "node-a")];
    const { agent, log, api } = await agentOn(pods);
    (pods[0] as Pod).metadata.deletionTimestamp = new Date().toISOString();
    pods.splice(1, 1);
    await agent.reconcile();
    expect(log.slice(2).sort()).toEqual(["stop ui/a", "stop ui/b"]);
    expect(api.deletes).toEqual(["a grace=0 uid=u1"]);
    expect(pods).toEqual([]);
    expect(agent.runningPods()).toEqual([]);
  });

  it("a pod re-created under the same name (another uid) replaces the old one; one that cannot run is said once, not retried", async () => {
    const pods = [pod("a", "u1", "node-a")];
    const said: string[] = [];
    const { agent, log } = await agentOn(pods);
    pods[0] = pod("a", "u9", "node-a");
    await agent.reconcile();
    expect(log).toEqual(["start ui/a 8080", "stop ui/a", "start ui/a 8080"]);
    pods.push(pod("bad", "u5", "node-a", { args: ["nonsense"] }));
    (agent as unknown as { opts: { say: (l: string) => void } }).opts.say = (l) => said.push(l);
    await agent.reconcile();
    await agent.reconcile();
    expect(said).toEqual(["node agent: cannot run ui/bad: container ui: argument 'nonsense' is not a listener (PORT or PORT/tls)"]);
    expect(pods[1]?.status).toBeUndefined();
  });
});
