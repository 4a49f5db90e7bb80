import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as os from "node:os";
import * as path from "node:path";
import { DEFAULT_INGRESS_CLASS, LEGACY_INGRESS_CLASS } from "../core/cilium/plan";
import { CONFIG_CHECKSUM } from "../core/cilium/rollout";
import { parseJson, UserError } from "../core/errors";
import { heldObject, keepAnnotations } from "../core/exposure-model";
import { type ClusterReader, type CustomKind, type ListScope, labelSelector } from "../core/kube/cluster";
import type { ConfigMap, EndpointSlice, GenericObject, Node, Pod, Secret, Service } from "../core/kube/types";
import { checkListAnswer, checkObject, formatObjectProblem, type ObjectProblem, problemList } from "../core/kube/validate";
import { printableValue, shownValue } from "../core/text";
import { parseYamlBounded, placeIn, SMALL_YAML_VALUES } from "../core/yaml";
import { FILE_LIMITS, fileKind, readBoundedText } from "./bounded-file";

// client-node is an ES module: its types are imported in "import" resolution mode.
type ClientNode = typeof import("@kubernetes/client-node", { with: { "resolution-mode": "import" }});
type KubeConfig = InstanceType<ClientNode["KubeConfig"]>;

interface KubeTarget {
  /** Path to a kubeconfig, or its content (as `kubernetes:kubeconfig` allows); default: $KUBECONFIG or ~/.kube/config. */
  kubeconfig?: string;
  /** Context name; default: the kubeconfig's current context. */
  context?: string;
  /** Per-request timeout, so an unreachable cluster fails in seconds instead of hanging. */
  timeoutMs?: number;
  /** Use the pod's ServiceAccount (the portal deployed in the cluster) instead of a kubeconfig; `kubeconfig` and `context` are then ignored. */
  inCluster?: boolean;
  /** In the cluster (no kube context there): the cluster's name, the context the stack deploys through. Elsewhere the context read through names it. */
  name?: string;
  /** How the credential was found, for messages ("Secret platform-portal/prod"), when not a kube context; `name` then names the cluster. */
  via?: string;
}

const DEFAULT_TIMEOUT_MS = 10_000;
// Bytes of one answer: a page past PAGE_BYTES is asked again with fewer items, down to one (etcd stores at most 1.5 MiB). ANSWERS_IN_FLIGHT are read at once,
// the others wait within their timeout: a reader buffers at most 16 MiB whatever the cluster holds (the in-cluster portal's limit is 256Mi).
export const PAGE_BYTES = 4 * 2 ** 20;
const PAGE_ITEMS = 500;
const ANSWERS_IN_FLIGHT = 4;

/** An answer past PAGE_BYTES: refused, or a list's page asked again with fewer items. */
class PageTooLarge extends UserError {}

// Connection, TLS and HTTP parse failures: the cluster is not reachable as configured.
const UNREACHABLE_CODES =
  /^(ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|ECONNRESET|EAI_AGAIN|EPIPE|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO|ERR_TLS|EPROTO|HPE_)/;

/** An API answer: its status, its parsed body and its size in bytes when read. */
type Answer = { status: number; body?: unknown; bytes?: number; retryAfter?: string };

/** client-node's KubeConfig, loaded on first connect: the small file the build ships (docs/benchmarks.md, CLI start-up), else the package itself. */
async function loadClientNode(): Promise<Pick<ClientNode, "KubeConfig">> {
  for (const vendor of ["vendor", path.join("dist", "vendor")]) {
    const bundled = path.join(__dirname, "..", "..", vendor, "client-node.cjs");
    if (fs.existsSync(bundled)) return require(bundled) as Pick<ClientNode, "KubeConfig">;
  }
  // client-node is an ES module; a dynamic import keeps this file loadable from CommonJS.
  return import("@kubernetes/client-node");
}

/** Tries of one read the API server answers 429 (the last 429 is an error). */
export const READ_ATTEMPTS = 5;
/** Longest wait between two tries, whatever Retry-After says. */
export const RETRY_WAIT_MAX_MS = 5_000;

/** The wait before another try after a 429: Retry-After (seconds, or an HTTP date), else 250 ms doubling each try; within 100 ms and RETRY_WAIT_MAX_MS. */
export function retryWaitMs(retryAfter: string | undefined, attempt: number, now = Date.now()): number {
  let wait = 250 * 2 ** (attempt - 1);
  const header = retryAfter?.trim() ?? "";
  if (/^\d{1,9}$/.test(header)) wait = Number(header) * 1000;
  else if (header !== "" && Number.isFinite(Date.parse(header))) wait = Date.parse(header) - now;
  return Math.min(RETRY_WAIT_MAX_MS, Math.max(100, wait));
}

// Before client-node reads it whole: a device, FIFO or huge file is refused (`/dev/zero` grew the process until it died); stat() cannot block on a FIFO.
// A missing file or a folder is left to the loader, which names it.
function checkKubeconfigFile(file: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return;
  }
  if (stat.isDirectory()) return;
  if (!stat.isFile()) throw new UserError(`cannot load kubeconfig ${file}: it is ${fileKind(stat)}; give a regular file`);
  if (stat.size > FILE_LIMITS.kubeconfig) {
    throw new UserError(
      `cannot load kubeconfig ${file}: it is ${(stat.size / 2 ** 20).toFixed(1)} MiB, larger than the ${FILE_LIMITS.kubeconfig / 2 ** 20} MiB limit`,
    );
  }
  checkKubeconfigText(readBoundedText(file, "kubeconfig", FILE_LIMITS.kubeconfig), file);
}

/** Refuses a kubeconfig nested too deeply or holding too many values before client-node, whose parser has no value limit, reads it. */
function checkKubeconfigText(text: string, shown: string): void {
  const parsed = parseYamlBounded(text, { maxValues: SMALL_YAML_VALUES });
  if (!parsed.refused) return;
  throw new UserError(`${placeIn(parsed.lineCounter, printableValue(shown), parsed.refused.offset)}: kubeconfig refused: ${parsed.refused.message}`);
}

/** Why client-node could not load a kubeconfig, in one line (its YAML errors span several; an empty file fails on a property read). */
function loadFailure(err: unknown): string {
  const message = (err as Error)?.message ?? String(err);
  if (err instanceof TypeError && /Cannot read properties of (undefined|null)/.test(message)) {
    return "not a kubeconfig (empty, or no clusters/contexts/users mapping)";
  }
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === "EISDIR") return "it is a folder, not a kubeconfig file";
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES") return "permission denied";
  const first = message.split("\n")[0]?.trim() || "unreadable";
  return (err as { name?: string })?.name === "YAMLException" ? `not valid YAML: ${first}` : first;
}

/** The live cluster through the API server: every method is one list (or get) call; `requests` counts them for the benchmarks. */
export class LiveClusterReader implements ClusterReader {
  requests = 0;
  /** Answers being read now (ANSWERS_IN_FLIGHT at most), and the requests waiting for their turn. */
  private reading = 0;
  private waiting: (() => void)[] = [];
  private constructor(
    private readonly kc: KubeConfig,
    private readonly server: string,
    readonly source: string,
    private readonly timeoutMs: number,
    readonly name: string | undefined,
  ) {}

  static async connect(target: KubeTarget): Promise<LiveClusterReader> {
    const lib = await loadClientNode();
    const kc = new lib.KubeConfig();
    const cfg = target.kubeconfig?.trim();
    // Settings may hold the kubeconfig's content rather than its path.
    const inline = !!cfg && (cfg.includes("\n") || cfg.startsWith("{") || cfg.startsWith("apiVersion"));
    const defaultFile = path.join(os.homedir(), ".kube", "config");
    try {
      if (target.inCluster) {
        // loadFromCluster() does not check anything: without these the client would call "https://undefined:undefined".
        if (!process.env.KUBERNETES_SERVICE_HOST || !process.env.KUBERNETES_SERVICE_PORT) {
          throw new Error("KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT are not set: not running in a pod");
        }
        kc.loadFromCluster();
      } else if (inline) {
        checkKubeconfigText(cfg, "(kubeconfig given inline)");
        kc.loadFromString(cfg);
      } else if (cfg) {
        checkKubeconfigFile(cfg);
        kc.loadFromFile(cfg);
      } else {
        // Without any kubeconfig, client-node falls back to a made-up localhost context: say so instead.
        if (!process.env.KUBECONFIG && !fs.existsSync(defaultFile) && !process.env.KUBERNETES_SERVICE_HOST) {
          throw new UserError(`no kubeconfig: KUBECONFIG is not set and ${defaultFile} does not exist; point KUBECONFIG at the cluster's kubeconfig`);
        }
        for (const file of (process.env.KUBECONFIG || defaultFile).split(path.delimiter)) if (file) checkKubeconfigFile(file);
        kc.loadFromDefault();
      }
    } catch (err) {
      if (err instanceof UserError) throw err;
      if (target.inCluster) throw new UserError(`cannot load the in-cluster configuration: ${loadFailure(err)}`);
      const where = inline ? " (given inline)" : ` ${cfg || process.env.KUBECONFIG || defaultFile}`;
      throw new UserError(`cannot load kubeconfig${where}: ${loadFailure(err)}`);
    }
    if (target.context && !target.inCluster) {
      if (!kc.getContexts().some((c) => c.name === target.context)) {
        const known = kc.getContexts().map((c) => shownValue(c.name, 128));
        throw new UserError(
          `kube context '${shownValue(target.context, 128)}' is not in the kubeconfig (known: ${known.join(", ") || "none"}); set kubernetes:context in the stack file or fix KUBECONFIG`,
        );
      }
      kc.setCurrentContext(target.context);
    }
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new UserError("the kubeconfig has no current cluster: set kubernetes:context in the stack file or KUBECONFIG");
    const via = target.via ?? (target.inCluster ? "in-cluster ServiceAccount" : `context ${kc.getCurrentContext()}`);
    if (!URL.canParse(cluster.server)) throw new UserError(`the kubeconfig's server ${JSON.stringify(cluster.server).slice(0, 100)} is not a URL`);
    const source = `${via} (${cluster.server})`;
    const name = target.inCluster || target.via ? target.name : kc.getCurrentContext();
    return new LiveClusterReader(kc, cluster.server, source, target.timeoutMs ?? DEFAULT_TIMEOUT_MS, name || undefined);
  }

  // One GET (a POST when `post` is the body), answered as parsed JSON. Aborted, socket and agent destroyed, when `timeoutMs` passes: after an outage nothing
  // stays open. No part of a body ever goes into an error (a Secrets answer would leak into messages, .env comments and --json).
  private async get(what: string, apiPath: string, post?: object): Promise<Answer> {
    // 429: the API server asks to come back (a new CRD's storage initialising, priority and fairness shedding load): tried again within the read's timeout.
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      const answer = await this.getOnce(what, apiPath, post);
      if (answer.status !== 429) return answer;
      const wait = retryWaitMs(answer.retryAfter, attempt);
      if (attempt >= READ_ATTEMPTS || Date.now() - started + wait > this.timeoutMs) {
        throw new UserError(
          `${this.source} answered ${what} with HTTP 429 (too many requests) ${attempt} ${attempt === 1 ? "time" : "times"} in ${((Date.now() - started) / 1000).toFixed(1)}s: the API server is busy or the resource's storage is still initialising; run again in a moment`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private async getOnce(what: string, apiPath: string, post?: object): Promise<Answer> {
    // The timeout runs from here: a request waiting for its turn is answered within it too.
    const signal = AbortSignal.timeout(this.timeoutMs);
    // One abort listener per request, however many turns it waits (one per turn piled up past Node's listener limit).
    let wake = () => {};
    const onAbort = () => wake();
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      while (this.reading >= ANSWERS_IN_FLIGHT) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          this.waiting.push(resolve);
        });
        if (signal.aborted) throw new UserError(`cluster unreachable: ${this.source} did not answer ${what} within ${this.timeoutMs / 1000}s`);
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    this.reading++;
    try {
      return await this.send(what, apiPath, signal, post);
    } finally {
      this.reading--;
      for (const wake of this.waiting.splice(0)) wake();
    }
  }

  private async send(what: string, apiPath: string, signal: AbortSignal, post?: object): Promise<Answer> {
    this.requests++;
    // Appended, not resolved: a server URL may carry a path prefix (a proxy in front of the API).
    const url = new URL(`${this.server.replace(/\/+$/, "")}${apiPath}`);
    const options: https.RequestOptions = { headers: {} };
    try {
      await this.kc.applyToHTTPSOptions(options);
    } catch (err) {
      throw new UserError(`cannot use the credentials of ${this.source}: ${(err as Error).message}`);
    }
    const agent = options.agent as http.Agent | undefined;
    // Aborting destroys the request and its answer, wherever the read is.
    let req: http.ClientRequest;
    try {
      req = (url.protocol === "http:" ? http : https).request(url, {
        ...options,
        signal,
        method: post ? "POST" : "GET",
        headers: { ...options.headers, accept: "application/json", ...(post ? { "content-type": "application/json" } : {}) },
      });
    } catch (err) {
      // TLS material Node.js cannot use (a certificate or CA that is not PEM) throws here, before any connection: the kubeconfig's fault, not the cluster's.
      agent?.destroy();
      const reason = ((err as Error).message ?? String(err)).split("\n")[0];
      throw new UserError(`cannot use the credentials of ${this.source}: ${reason}; check the kubeconfig's certificate and key data`);
    }
    try {
      return await this.readAnswer(req, what, post);
    } catch (err) {
      req.destroy();
      if (signal.aborted) throw new UserError(`cluster unreachable: ${this.source} did not answer ${what} within ${this.timeoutMs / 1000}s`);
      if (err instanceof UserError) throw err;
      const e = err as { code?: string; cause?: { code?: string } };
      const netCode = typeof e.code === "string" ? e.code : e.cause?.code;
      if (netCode && UNREACHABLE_CODES.test(netCode)) {
        throw new UserError(`cluster unreachable: ${this.source}: ${netCode} while reading ${what}; check the kube context and that the API server is up`);
      }
      throw new UserError(`reading ${what} from ${this.source} failed: ${netCode ?? "connection error"}`);
    } finally {
      agent?.destroy();
    }
  }

  /** Sends the request, then reads its answer, at most PAGE_BYTES of it. */
  private async readAnswer(req: http.ClientRequest, what: string, post?: object): Promise<Answer> {
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      req.on("response", resolve).on("error", reject);
      req.end(post ? JSON.stringify(post) : undefined);
    });
    const status = res.statusCode ?? 0;
    const retryAfter = res.headers["retry-after"];
    // A refusal's Status object is kept for a POST (the dry run's reason), never for a GET (a Secret read's could leak).
    if (status === 429 || ((status < 200 || status >= 300) && !post)) {
      res.resume();
      req.destroy();
      return { status, ...(retryAfter !== undefined ? { retryAfter } : {}) };
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > PAGE_BYTES) throw new PageTooLarge(`${this.source} answered ${what} with more than ${PAGE_BYTES / 2 ** 20} MiB: refused`);
      chunks.push(chunk);
    }
    // One copy at a time: the chunks go as soon as they are joined.
    const joined = Buffer.concat(chunks);
    chunks.length = 0;
    const body = parseJson(joined.toString("utf8"), `${this.source} answered ${what} with something that is not JSON (${size} bytes; not shown)`);
    return { status, body, bytes: size };
  }

  private statusError(what: string, status: number): UserError {
    if (status === 401) return new UserError(`cluster refused the credentials of ${this.source} (401) while reading ${what}; renew the kubeconfig`);
    if (status === 403) return new UserError(`${this.source} is not allowed to read ${what} (403): grant list/get on it`);
    return new UserError(`reading ${what} from ${this.source} failed with HTTP ${status}`);
  }

  // A list under `prefix` ("/api/v1"), page by page, each page checked item by item; only the items `scope.keep` accepts are held, slimmed: memory follows
  // what the caller keeps, not what the cluster holds. A 404 (not served) answers `notServed` when given.
  private async list<T>(prefix: string, plural: string, kind: string, scope: ListScope<T> = {}, notServed?: T[]): Promise<T[]> {
    const { namespace: ns, labels, keep } = scope;
    const what = `${plural}${ns !== undefined ? ` in namespace ${ns}` : ""}${labels ? ` (${labelSelector(labels)})` : ""}`;
    const apiPath = ns !== undefined ? `${prefix}/namespaces/${encodeURIComponent(ns)}/${plural}` : `${prefix}/${plural}`;
    const kept: T[] = [];
    let limit = PAGE_ITEMS;
    let token = "";
    for (;;) {
      const query = new URLSearchParams({
        limit: String(limit),
        ...(token ? { continue: token } : {}),
        ...(labels ? { labelSelector: labelSelector(labels) } : {}),
      });
      let answer: Answer;
      try {
        answer = await this.get(what, `${apiPath}?${query}`);
      } catch (err) {
        if (!(err instanceof PageTooLarge)) throw err;
        if (limit === 1) throw new UserError(`${this.source} answered ${what} with one object larger than ${PAGE_BYTES / 2 ** 20} MiB: refused`);
        limit = Math.ceil(limit / 8);
        continue;
      }
      if (answer.status === 404 && notServed) return notServed;
      // 410: the continue token expired (the list took longer than etcd keeps its revision).
      if (answer.status === 410) throw new UserError(`reading ${what} from ${this.source}: the list expired while read page by page (HTTP 410); run again`);
      if (answer.status !== 200 || answer.body === undefined) throw this.statusError(what, answer.status);
      // Cut to what the model reads (a pod template keeps Cilium's config checksum) before it is checked: a fat object is neither checked nor held whole.
      const items = (answer.body as { items?: unknown } | undefined)?.items;
      if (Array.isArray(items)) for (const item of items) heldObject(item, [CONFIG_CHECKSUM]);
      const checked = checkListAnswer(kind, answer.body);
      if ("problems" in checked) {
        const list = problemList(checked.problems.map(formatObjectProblem));
        throw new UserError(`${this.source} answered ${what} with malformed objects (${checked.problems.length}):\n${list}`);
      }
      for (const item of checked.items as T[]) {
        if (!(keep?.(item) ?? true)) continue;
        // Held without managedFields, and only the annotations read (most of an object, at times): Cilium's checksum, the IngressClass ones.
        const { metadata } = item as { metadata: Record<string, unknown> };
        keepAnnotations(metadata, [CONFIG_CHECKSUM, DEFAULT_INGRESS_CLASS, LEGACY_INGRESS_CLASS]);
        delete metadata.managedFields;
        kept.push(item);
      }
      // Back towards PAGE_ITEMS once the pages are small again (past a tenant's fat objects).
      if ((answer.bytes ?? 0) < PAGE_BYTES / 4) limit = Math.min(PAGE_ITEMS, limit * 2);
      const next = (answer.body as { metadata?: { continue?: unknown } }).metadata?.continue;
      if (typeof next !== "string" || next === "") return kept;
      token = next;
    }
  }

  async listServices(scope?: ListScope<Service>) {
    return this.list("/api/v1", "services", "Service", scope);
  }
  async listNodes() {
    return this.list<Node>("/api/v1", "nodes", "Node");
  }
  async listPods(scope?: ListScope<Pod>) {
    return this.list("/api/v1", "pods", "Pod", scope);
  }
  async listEndpointSlices(scope?: ListScope<EndpointSlice>) {
    return this.list("/apis/discovery.k8s.io/v1", "endpointslices", "EndpointSlice", scope);
  }
  getConfigMap(namespace: string, name: string) {
    return this.getObject<ConfigMap>("ConfigMap", namespace, name);
  }
  /** One Secret by name (the in-cluster portal's other clusters: `get` on exactly those names, never a list); undefined when it does not exist. */
  getSecret(namespace: string, name: string) {
    return this.getObject<Secret>("Secret", namespace, name);
  }
  private async getObject<T>(kind: "ConfigMap" | "Secret", namespace: string, name: string): Promise<T | undefined> {
    const what = `${kind.toLowerCase()} ${namespace}/${name}`;
    const answer = await this.get(what, `/api/v1/namespaces/${encodeURIComponent(namespace)}/${kind.toLowerCase()}s/${encodeURIComponent(name)}`);
    if (answer.status === 404) return undefined;
    if (answer.status !== 200) throw this.statusError(what, answer.status);
    const problems = checkObject(kind, answer.body);
    if (problems.length) throw new UserError(`${this.source} answered ${what} with a malformed object: ${formatObjectProblem(problems[0] as ObjectProblem)}`);
    return answer.body as T;
  }
  async listSecrets(namespace: string, scope: Omit<ListScope<Secret>, "namespace"> = {}) {
    return this.list<Secret>("/api/v1", "secrets", "Secret", { ...scope, namespace });
  }
  async servedResources(groupVersion: string) {
    const what = `API discovery of ${groupVersion}`;
    const answer = await this.get(what, groupVersion.includes("/") ? `/apis/${groupVersion}` : `/api/${groupVersion}`);
    if (answer.status === 404) return [];
    if (answer.status !== 200) throw this.statusError(what, answer.status);
    const resources = (answer.body as { resources?: unknown } | undefined)?.resources;
    if (!Array.isArray(resources)) throw new UserError(`${this.source} answered ${what} without a resource list`);
    return resources.flatMap((r) => (r && typeof r === "object" && typeof (r as { name?: unknown }).name === "string" ? [(r as { name: string }).name] : []));
  }
  async dryRunCreateService(service: Service): Promise<{ admitted: true } | { admitted: false; message: string }> {
    const namespace = service.metadata.namespace ?? "default";
    const what = `a dry-run create of Service ${namespace}/${service.metadata.name}`;
    const body = { apiVersion: "v1", kind: "Service", ...service };
    const answer = await this.get(what, `/api/v1/namespaces/${encodeURIComponent(namespace)}/services?dryRun=All`, body);
    // 409: it exists already, which storage says after admission admitted it.
    if ((answer.status >= 200 && answer.status < 300) || answer.status === 409) return { admitted: true };
    const message = (answer.body as { message?: unknown } | undefined)?.message;
    return { admitted: false, message: typeof message === "string" ? message.slice(0, 2000) : `HTTP ${answer.status}` };
  }
  async listCustom(kind: CustomKind, scope?: ListScope<GenericObject>) {
    for (const version of kind.versions) {
      // 404: this version (or the whole CRD) is not served; try the next one.
      const notServed: GenericObject[] = [];
      const items = await this.list(`/apis/${kind.group}/${version}`, kind.plural, kind.kind, scope, notServed);
      if (items === notServed) continue;
      return items.map((o) => ({ ...o, kind: o.kind ?? kind.kind, apiVersion: o.apiVersion ?? `${kind.group}/${version}` }));
    }
    return [];
  }
}
