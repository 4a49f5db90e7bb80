// What a kubelet would write for the data path's nodes and pods: Node status (InternalIP, Ready),
// Pods bound to a node with the container ports their chart declares, and their status (podIP,
// Ready) once the pod's server answers. EndpointSlices are never written here: the real
// endpointslice controller makes them from these objects.
type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});
export type CoreApi = InstanceType<ClientNode["CoreV1Api"]>;

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
    };
    await core.replaceNodeStatus({ name: node.name, body: live });
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
  containers: readonly { name: string; ports: readonly PodPort[] }[];
}

/** Creates the Pod bound to its node (no scheduler), as its workload controller would. */
export async function createPod(core: CoreApi, pod: PodObject): Promise<void> {
  await core.createNamespacedPod({
    namespace: pod.namespace,
    body: {
      metadata: { name: pod.name, labels: pod.labels },
      spec: {
        nodeName: pod.node,
        automountServiceAccountToken: false,
        containers: pod.containers.map((c) => ({
          name: c.name,
          image: "e2e.invalid/pod-server:1",
          ports: c.ports.map((p) => ({
            ...(p.name ? { name: p.name } : {}),
            containerPort: p.containerPort,
            protocol: "TCP",
            ...(p.hostPort ? { hostPort: p.hostPort } : {}),
          })),
        })),
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
    live.status = {
      phase: "Running",
      podIP: status.podIP,
      podIPs: [{ ip: status.podIP }],
      hostIP: status.hostIP,
      hostIPs: [{ ip: status.hostIP }],
      startTime: live.status?.startTime ?? now,
      conditions: [
        { type: "Initialized", status: "True", lastTransitionTime: now },
        { type: "PodScheduled", status: "True", lastTransitionTime: now },
        { type: "ContainersReady", status: flag, lastTransitionTime: now },
        { type: "Ready", status: flag, lastTransitionTime: now },
      ],
    };
    await core.replaceNamespacedPodStatus({ namespace: pod.namespace, name: pod.name, body: live });
  });
}
