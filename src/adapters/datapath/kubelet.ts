// A kubelet's part, for nodes with no container runtime: Node status (InternalIP, Ready,
// capacity for the scheduler), and the node agent (NodeAgent) that runs every Pod bound to its
// nodes (by the real kube-scheduler or by spec.nodeName) through a PodRuntime (the data path: a
// network namespace and a server per pod), writes its status as a kubelet does (podIP, containers
// ready, Ready), and on deletion stops it and completes the deletion, so that a Deployment's
// ReplicaSet replaces it. EndpointSlices are never written here: the real endpointslice
// controller makes them from these objects.
import { listenerArg, type PodListener, parseListener } from "./pod-server";

type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});
export type CoreApi = InstanceType<ClientNode["CoreV1Api"]>;
type V1Pod = import("@kubernetes/client-node", { with: { "resolution-mode": "import" }}).V1Pod;

const codeOf = (err: unknown) => (err as { code?: number }).code;

async function ignoreConflict(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (codeOf(err) !== 409) throw err;
  }
}

/** read-modify-write, retried when a controller wrote the object in between (409). */
async function retryOnConflict(fn: () => Promise<unknown>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await fn();
      return;
    } catch (err) {
      if (codeOf(err) !== 409 || attempt >= 10) throw err;
    }
  }
}

const NODE_CAPACITY = { cpu: "8", memory: "16Gi", pods: "250" };

/** Registers a Node (if new) and writes its status: InternalIP and the Ready condition. */
export async function writeNode(core: CoreApi, node: { name: string; ip: string; ready: boolean }): Promise<void> {
  await ignoreConflict(core.createNode({ body: { metadata: { name: node.name, labels: { "kubernetes.io/hostname": node.name } } } }));
  await retryOnConflict(async () => {
    const live = await core.readNode({ name: node.name });
    const now = new Date();
    live.status = {
      ...live.status,
      addresses: [
        { type: "InternalIP", address: node.ip },
        { type: "Hostname", address: node.name },
      ],
      conditions: [
        {
          type: "Ready",
          status: node.ready ? "True" : "False",
          reason: node.ready ? "KubeletReady" : "NodeStatusUnknown",
          lastHeartbeatTime: now,
          lastTransitionTime: now,
        },
      ],
      // What the scheduler fits pods into (no requests are set: only the pod count matters).
      capacity: NODE_CAPACITY,
      allocatable: NODE_CAPACITY,
    };
    await core.replaceNodeStatus({ name: node.name, body: live });
  });
  // The API server taints a new Node not-ready (NoSchedule); the node lifecycle controller lifts
  // it once the Node is Ready. That controller does not run here (it would mark these nodes
  // NotReady for want of a kubelet's lease), so its part is done here: the scheduler then binds pods.
  const taint = node.ready ? "node.kubernetes.io/not-ready" : "";
  await retryOnConflict(async () => {
    const live = await core.readNode({ name: node.name });
    const taints = live.spec?.taints ?? [];
    const kept = taints.filter((t) => t.key !== taint);
    if (!node.ready && !taints.some((t) => t.key === "node.kubernetes.io/not-ready")) kept.push({ key: "node.kubernetes.io/not-ready", effect: "NoSchedule" });
    if (kept.length === taints.length && kept.every((t, i) => t === taints[i])) return;
    live.spec = { ...live.spec, taints: kept };
    await core.replaceNode({ name: node.name, body: live });
  });
}

export interface PodPort {
  name?: string;
  containerPort: number;
  hostPort?: number;
}

export interface PodObject {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  node: string;
  /** `listeners`: what the container's server answers on (its args; default: its ports, plain http). */
  containers: readonly { name: string; ports: readonly PodPort[]; listeners?: readonly PodListener[] }[];
}

/** The image every pod runs: the data path's pod server (pod-server.ts), its args the listeners. */
export const POD_SERVER_IMAGE = "e2e.invalid/pod-server:1";

/** A container of the pod server: `args` are its listeners (`8080`, `8443/tls`), `ports` what it declares. */
export function podServerContainer(name: string, ports: readonly PodPort[], listeners?: readonly PodListener[]) {
  return {
    name,
    image: POD_SERVER_IMAGE,
    ...(listeners ? { args: listeners.map(listenerArg) } : {}),
    ports: ports.map((p) => ({
      ...(p.name ? { name: p.name } : {}),
      containerPort: p.containerPort,
      protocol: "TCP",
      ...(p.hostPort ? { hostPort: p.hostPort } : {}),
    })),
  };
}

/** Creates the Pod bound to its node (no scheduler), as a StatefulSet-like controller would; the node agent runs it. */
export async function createPod(core: CoreApi, pod: PodObject): Promise<void> {
  await core.createNamespacedPod({
    namespace: pod.namespace,
    body: {
      metadata: { name: pod.name, labels: pod.labels },
      spec: {
        nodeName: pod.node,
        automountServiceAccountToken: false,
        containers: pod.containers.map((c) => podServerContainer(c.name, c.ports, c.listeners)),
      },
    },
  });
}

/** The pod's status as its kubelet reports it: Running with its address, Ready or not. */
export async function writePodStatus(core: CoreApi, pod: { namespace: string; name: string }, status: { podIP: string; hostIP: string; ready: boolean }) {
  await retryOnConflict(async () => {
    const live = await core.readNamespacedPod({ namespace: pod.namespace, name: pod.name });
    const now = new Date();
    const flag = status.ready ? "True" : "False";
    const started = live.status?.startTime ?? now;
    live.status = {
      phase: "Running",
      podIP: status.podIP,
      podIPs: [{ ip: status.podIP }],
      hostIP: status.hostIP,
      hostIPs: [{ ip: status.hostIP }],
      startTime: started,
      conditions: [
        { type: "PodReadyToStartContainers", status: "True", lastTransitionTime: now },
        { type: "Initialized", status: "True", lastTransitionTime: now },
        { type: "PodScheduled", status: "True", lastTransitionTime: now },
        { type: "ContainersReady", status: flag, lastTransitionTime: now },
        { type: "Ready", status: flag, lastTransitionTime: now },
      ],
      // `kubectl get pods` counts READY from these.
      containerStatuses: (live.spec?.containers ?? []).map((c) => ({
        name: c.name,
        image: c.image ?? POD_SERVER_IMAGE,
        imageID: "",
        ready: status.ready,
        started: true,
        restartCount: 0,
        state: { running: { startedAt: started } },
      })),
    };
    await core.replaceNamespacedPodStatus({ namespace: pod.namespace, name: pod.name, body: live });
  });
}

/** A pod as the node agent runs it: its listeners and hostPorts, read from its spec. */
export interface PodToRun {
  /** `namespace/name`. */
  id: string;
  node: string;
  listeners: PodListener[];
  hostPorts: { hostPort: number; containerPort: number }[];
}

/** What runs a pod's "containers": the data path (a network namespace and a server), or addresses only. */
export interface PodRuntime {
  /** Starts the pod; its address once its server answers. */
  start(pod: PodToRun): Promise<{ ip: string }>;
  /** Stops it and removes its namespace; nothing when it is not running. */
  stop(id: string): Promise<void>;
}

/**
 * What the pod's containers serve: each container's args as listeners (`8080`, `8443/tls`: the
 * pod server's command line), or, without args, its declared TCP ports over plain http.
 */
export function podToRun(pod: V1Pod): PodToRun | { id: string; problem: string } {
  const id = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const listeners: PodListener[] = [];
  const hostPorts: PodToRun["hostPorts"] = [];
  for (const c of pod.spec?.containers ?? []) {
    const tcp = (c.ports ?? []).filter((p) => (p.protocol ?? "TCP") === "TCP");
    if (c.args?.length) {
      for (const a of c.args) {
        const l = parseListener(a);
        if (!l) return { id, problem: `container ${c.name}: argument '${a.slice(0, 40)}' is not a listener (PORT or PORT/tls)` };
        listeners.push(l);
      }
    } else listeners.push(...tcp.map((p) => ({ port: p.containerPort, tls: false })));
    for (const p of tcp) if (p.hostPort) hostPorts.push({ hostPort: p.hostPort, containerPort: p.containerPort });
  }
  const unique = [...new Map(listeners.map((l) => [l.port, l])).values()];
  if (unique.length === 0) return { id, problem: "no port to serve (no container args nor TCP ports)" };
  return { id, node: pod.spec?.nodeName ?? "", listeners: unique, hostPorts };
}

interface Running {
  uid: string;
  ip: string;
}

/**
 * The kubelet's part for a set of nodes: every Pod bound to one of them is run through the
 * runtime and its status written (Running, podIP, containers ready, Ready); a Pod being deleted is
 * stopped and its deletion completed (grace period 0, as a kubelet does once its containers are
 * gone), a Pod removed by force is stopped. Level-triggered: each pass compares the live Pods
 * with what runs; a watch on Pods starts a pass at once, and a pass runs every `resyncMs` anyway.
 */
export class NodeAgent {
  private readonly running = new Map<string, Running>();
  /** uids that could not start: said once, not retried (a new Pod gets a new uid). */
  private readonly failed = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private watch: AbortController | undefined;
  private pass: Promise<void> = Promise.resolve();
  private again = false;
  private busy = false;
  private stopped = false;
  /** Whether the last watch could not connect: an outage is said once, and its end once. */
  private unreachable = false;

  constructor(
    private readonly lib: ClientNode,
    private readonly kc: InstanceType<ClientNode["KubeConfig"]>,
    private readonly nodes: readonly { name: string; ip: string }[],
    private readonly runtime: PodRuntime,
    private readonly opts: { say?: (line: string) => void; resyncMs?: number } = {},
  ) {}

  private get core(): CoreApi {
    return this.kc.makeApiClient(this.lib.CoreV1Api);
  }

  /** Runs the first pass (every Pod already bound), then keeps following. */
  async start(): Promise<void> {
    await this.reconcile();
    // Kept referenced: while the API server is away (no watch connection) this timer is what keeps
    // the agent's process alive and retrying. stop() clears it.
    this.timer = setInterval(() => this.kick(), this.opts.resyncMs ?? 5000);
    // Not awaited: a watch that is slow to connect must not hold the start (the resync covers it).
    void this.follow();
  }

  /** The ids (`namespace/name`) of the Pods running now. */
  runningPods(): string[] {
    return [...this.running.keys()];
  }

  /** Starts a pass now (or right after the one running). */
  kick(): void {
    if (this.stopped) return;
    if (this.busy) {
      this.again = true;
      return;
    }
    this.busy = true;
    this.pass = (async () => {
      do {
        this.again = false;
        try {
          await this.reconcile();
        } catch (err) {
          this.say(`node agent: ${(err as Error).message}`);
        }
      } while (this.again && !this.stopped);
      this.busy = false;
    })();
  }

  /** Waits for the pass in progress, if any. */
  async settled(): Promise<void> {
    await this.pass;
  }

  private say(line: string): void {
    this.opts.say?.(line);
  }

  private async follow(): Promise<void> {
    if (this.stopped) return;
    const watch = new this.lib.Watch(this.kc);
    const retry = () => {
      if (!this.stopped) this.retry = setTimeout(() => void this.follow(), 1000);
    };
    try {
      this.watch = await watch.watch(
        "/api/v1/pods",
        {},
        () => {
          if (this.unreachable) this.say("node agent: the API server answers again");
          this.unreachable = false;
          this.kick();
        },
        (err: unknown) => {
          // Closed by the server or failed (the client gives a failed connection here too): a pass
          // catches up, then a new watch.
          if (this.stopped) return;
          if (err && !this.unreachable) this.say("node agent: the API server does not answer; retrying every second");
          if (err) this.unreachable = true;
          this.kick();
          retry();
        },
      );
    } catch {
      retry();
    }
  }

  /** One pass: start what is bound and not running, stop what is gone or being deleted. */
  async reconcile(): Promise<void> {
    const core = this.core;
    const seen = new Set<string>();
    const toStart: V1Pod[] = [];
    const toFinish: V1Pod[] = [];
    for (const node of this.nodes) {
      const list = await core.listPodForAllNamespaces({ fieldSelector: `spec.nodeName=${node.name}` });
      for (const pod of list.items) {
        const id = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
        const uid = pod.metadata?.uid ?? "";
        seen.add(id);
        if (pod.metadata?.deletionTimestamp) toFinish.push(pod);
        else if (this.running.get(id)?.uid !== uid && !this.failed.has(uid) && pod.status?.phase !== "Succeeded" && pod.status?.phase !== "Failed")
          toStart.push(pod);
      }
    }
    for (const id of [...this.running.keys()]) {
      if (!seen.has(id)) await this.stopPod(id, "gone from the API");
    }
    await Promise.all([...toFinish.map((p) => this.finish(p)), ...toStart.map((p) => this.startPod(p))]);
  }

  private async stopPod(id: string, why: string): Promise<void> {
    if (!this.running.has(id)) return;
    this.running.delete(id);
    await this.runtime.stop(id);
    this.say(`node agent: stopped ${id} (${why})`);
  }

  /** What a kubelet does once a deleted pod's containers are gone: delete it for good (grace 0, this very uid). */
  private async finish(pod: V1Pod): Promise<void> {
    const id = `${pod.metadata?.namespace}/${pod.metadata?.name}`;
    await this.stopPod(id, "deleted");
    try {
      await this.core.deleteNamespacedPod({
        namespace: pod.metadata?.namespace ?? "",
        name: pod.metadata?.name ?? "",
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: pod.metadata?.uid ?? "" } },
      });
    } catch (err) {
      // Gone already (404), or another pod now holds the name (409): nothing left to do.
      if (codeOf(err) !== 404 && codeOf(err) !== 409) throw err;
    }
  }

  private async startPod(pod: V1Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? "";
    const spec = podToRun(pod);
    const id = spec.id;
    // The same name, another uid (a pod re-created under its name): the old one goes first.
    await this.stopPod(id, "replaced");
    if ("problem" in spec) {
      this.failed.add(uid);
      this.say(`node agent: cannot run ${id}: ${spec.problem}`);
      return;
    }
    const node = this.nodes.find((n) => n.name === spec.node);
    if (!node) return;
    let ip: string;
    try {
      ip = (await this.runtime.start(spec)).ip;
    } catch (err) {
      this.failed.add(uid);
      this.say(`node agent: cannot run ${id}: ${(err as Error).message}`);
      return;
    }
    this.running.set(id, { uid, ip });
    try {
      await writePodStatus(
        this.core,
        { namespace: pod.metadata?.namespace ?? "", name: pod.metadata?.name ?? "" },
        { podIP: ip, hostIP: node.ip, ready: true },
      );
      this.say(`node agent: running ${id} at ${ip}`);
    } catch (err) {
      // Deleted meanwhile: the next pass stops it.
      if (codeOf(err) !== 404) throw err;
    }
  }

  /** Stops following; with `stopPods`, stops every pod it runs too. */
  async stop(opts: { stopPods?: boolean } = {}): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.retry) clearTimeout(this.retry);
    this.watch?.abort();
    await this.pass;
    if (opts.stopPods) for (const id of [...this.running.keys()]) await this.stopPod(id, "agent stopped");
  }
}
