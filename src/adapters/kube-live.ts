import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { UserError } from "../core/errors";
import type { ClusterReader, CustomKind } from "../core/kube/cluster";
import type { ConfigMap, EndpointSlice, GenericObject, Node, Pod, Secret, Service } from "../core/kube/types";

// client-node is an ES module: its types are imported in "import" resolution mode.
type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});
type KubeConfig = InstanceType<ClientNode["KubeConfig"]>;
/** Per-request options of the generated API clients (their middleware sets the abort signal). */
type RequestOptions = NonNullable<Parameters<InstanceType<ClientNode["CoreV1Api"]>["listNode"]>[1]>;

export interface KubeTarget {
  /** Path to a kubeconfig, or its content (as `kubernetes:kubeconfig` allows); default: $KUBECONFIG or ~/.kube/config. */
  kubeconfig?: string;
  /** Context name; default: the kubeconfig's current context. */
  context?: string;
  /** Per-request timeout, so an unreachable cluster fails in seconds instead of hanging. */
  timeoutMs?: number;
  /**
   * Use the pod's ServiceAccount (the portal deployed in the cluster) instead of a kubeconfig;
   * `kubeconfig` and `context` are then ignored.
   */
  inCluster?: boolean;
}

export const DEFAULT_TIMEOUT_MS = 10_000;

/**
 * client-node, loaded when a command first connects. The CLI's build (`npm run build`) ships it
 * pre-bundled as one file, dist/vendor/client-node.cjs, which loads in about a third of the CPU
 * time of its hundreds of ES modules (docs/benchmarks.md, CLI start-up); the same bundling the
 * in-cluster portal runs on. From the TypeScript sources (tests, the program) it is the package.
 */
async function loadClientNode(): Promise<ClientNode> {
  const bundled = path.join(__dirname, "..", "..", "vendor", "client-node.cjs");
  if (fs.existsSync(bundled)) return require(bundled) as ClientNode;
  // client-node is an ES module; a dynamic import keeps this file loadable from CommonJS.
  return import("@kubernetes/client-node");
}

/**
 * The live cluster through the API server. Every method is one list (or get) call;
 * `requests` counts them so benchmarks can check they do not grow with the contract.
 */
export class LiveClusterReader implements ClusterReader {
  requests = 0;
  private constructor(
    private readonly lib: ClientNode,
    private readonly kc: KubeConfig,
    readonly source: string,
    private readonly timeoutMs: number,
  ) {}

  static async connect(target: KubeTarget): Promise<LiveClusterReader> {
    const lib = await loadClientNode();
    const kc = new lib.KubeConfig();
    try {
      const cfg = target.kubeconfig?.trim();
      if (target.inCluster) {
        // loadFromCluster() does not check anything: without these the client would call "https://undefined:undefined".
        if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT) {
          throw new Error("KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set: not running in a pod");
        }
        kc.loadFromCluster();
      } else if (cfg && (cfg.includes("\n") || cfg.startsWith("{") || cfg.startsWith("apiVersion"))) kc.loadFromString(cfg);
      else if (cfg) kc.loadFromFile(cfg);
      else {
        // Without any kubeconfig, client-node falls back to a made-up localhost context: say so instead.
        const defaultFile = path.join(os.homedir(), ".kube", "config");
        if (!process.env.KUBECONFIG && !fs.existsSync(defaultFile) && !process.env.KUBERNETES_SERVICE_HOST) {
          throw new UserError(`no kubeconfig: KUBECONFIG is not set and ${defaultFile} does not exist; point KUBECONFIG at the cluster's kubeconfig`);
        }
        kc.loadFromDefault();
      }
    } catch (err) {
      if (err instanceof UserError) throw err;
      if (target.inCluster) throw new UserError(`cannot load the in-cluster configuration: ${(err as Error).message}`);
      throw new UserError(`cannot load kubeconfig${target.kubeconfig ? ` ${target.kubeconfig}` : ""}: ${(err as Error).message}`);
    }
    if (target.context && !target.inCluster) {
      if (!kc.getContexts().some((c) => c.name === target.context)) {
        const known = kc.getContexts().map((c) => c.name);
        throw new UserError(
          `kube context '${target.context}' is not in the kubeconfig (known: ${known.join(", ") || "none"}); set kubernetes:context in the stack file or fix KUBECONFIG`,
        );
      }
      kc.setCurrentContext(target.context);
    }
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new UserError("the kubeconfig has no current cluster: set kubernetes:context in the stack file or KUBECONFIG");
    const source = target.inCluster ? `in-cluster ServiceAccount (${cluster.server})` : `context ${kc.getCurrentContext()} (${cluster.server})`;
    return new LiveClusterReader(lib, kc, source, target.timeoutMs ?? DEFAULT_TIMEOUT_MS);
  }

  /**
   * One API call, bounded by the timeout. On timeout the request itself is aborted: a request
   * left pending keeps the socket, and with it the process (the Pulumi program), alive forever.
   */
  private async call<T>(what: string, fn: (options: RequestOptions) => Promise<T>): Promise<T> {
    this.requests++;
    const abort = new AbortController();
    const { Observable } = this.lib;
    const options: RequestOptions = {
      middleware: [
        {
          pre: (request) => {
            request.setSignal(abort.signal);
            return new Observable(Promise.resolve(request));
          },
          post: (response) => new Observable(Promise.resolve(response)),
        },
      ],
      middlewareMergeStrategy: "append",
    };
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(new UserError(`cluster unreachable: ${this.source} did not answer ${what} within ${this.timeoutMs / 1000}s`));
      }, this.timeoutMs);
      timer.unref();
    });
    try {
      return await Promise.race([fn(options), timeout]);
    } catch (err) {
      throw this.explain(what, err);
    } finally {
      clearTimeout(timer);
    }
  }

  private explain(what: string, err: unknown): Error {
    if (err instanceof UserError) return err;
    const e = err as { code?: number | string; message?: string; cause?: { code?: string } };
    const netCode = typeof e.code === "string" ? e.code : e.cause?.code;
    if (netCode && /^(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|ECONNRESET|EAI_AGAIN|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO)/.test(netCode)) {
      return new UserError(`cluster unreachable: ${this.source}: ${netCode} while reading ${what}; check the kube context and that the API server is up`);
    }
    if (typeof e.code === "number") {
      if (e.code === 401) return new UserError(`cluster refused the credentials of ${this.source} (401) while reading ${what}; renew the kubeconfig`);
      if (e.code === 403) return new UserError(`${this.source} is not allowed to read ${what} (403): grant list/get on it`);
      return new UserError(`reading ${what} from ${this.source} failed with HTTP ${e.code}`);
    }
    return new UserError(`reading ${what} from ${this.source} failed: ${e.message ?? String(err)}`);
  }

  private get core() {
    return this.kc.makeApiClient(this.lib.CoreV1Api);
  }

  async listServices() {
    const list = await this.call("services", (o) => this.core.listServiceForAllNamespaces({}, o));
    return list.items as unknown as Service[];
  }
  async listNodes() {
    const list = await this.call("nodes", (o) => this.core.listNode({}, o));
    return list.items as unknown as Node[];
  }
  async listPods() {
    const list = await this.call("pods", (o) => this.core.listPodForAllNamespaces({}, o));
    return list.items as unknown as Pod[];
  }
  async listEndpointSlices() {
    const discovery = this.kc.makeApiClient(this.lib.DiscoveryV1Api);
    const list = await this.call("endpointslices", (o) => discovery.listEndpointSliceForAllNamespaces({}, o));
    return list.items as unknown as EndpointSlice[];
  }
  async getConfigMap(namespace: string, name: string) {
    try {
      return (await this.call(`configmap ${namespace}/${name}`, (o) => this.core.readNamespacedConfigMap({ namespace, name }, o))) as unknown as ConfigMap;
    } catch (err) {
      if (err instanceof UserError && / HTTP 404$/.test(err.message)) return undefined;
      throw err;
    }
  }
  async listSecrets(namespace: string) {
    const list = await this.call(`secrets in namespace ${namespace}`, (o) => this.core.listNamespacedSecret({ namespace }, o));
    return list.items as unknown as Secret[];
  }
  async listCustom(kind: CustomKind) {
    const custom = this.kc.makeApiClient(this.lib.CustomObjectsApi);
    for (const version of kind.versions) {
      try {
        const list = (await this.call(`${kind.plural}.${kind.group}`, (o) =>
          custom.listClusterCustomObject({ group: kind.group, version, plural: kind.plural }, o),
        )) as { items?: GenericObject[] };
        return (list.items ?? []).map((o) => ({ ...o, kind: o.kind ?? kind.kind, apiVersion: o.apiVersion ?? `${kind.group}/${version}` }));
      } catch (err) {
        // 404: this version (or the whole CRD) is not served; try the next one.
        if (err instanceof UserError && / HTTP 404$/.test(err.message)) continue;
        throw err;
      }
    }
    return [];
  }
}
