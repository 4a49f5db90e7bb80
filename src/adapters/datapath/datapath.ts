// A real Kubernetes data path on this machine, without a container runtime: network namespaces
// for the nodes, the pods and an operator (the workstation), veth links, kube-proxy in nftables
// mode inside each node's namespace, and one HTTP(S) server process per pod. The API server stays
// on the host's 127.0.0.1; a relay through a Unix socket (the file system crosses namespaces)
// makes it appear on 127.0.0.1:<same port> inside every namespace, so the cluster's own
// kubeconfig works there unchanged. Used by the e2e (test/e2e/datapath.e2e.ts).
//
// Every namespace and process of a run is recorded in <stateDir>/<prefix>.json before it exists,
// so a run that died is cleaned up by the next one (cleanupStaleRuns), and nothing that file does
// not name is ever touched. Namespaces carry all the run's nftables rules (kube-proxy's, portmap's):
// deleting them deletes the rules.
import { execFile, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { failed, finding, ok, type Result } from "../../core/findings";
import { startTimeOf } from "../own-process";
import { commandLineOf, isOurs, parseRecordedProcesses, type RecordedProcess } from "../sandbox/processes";
import type { PodRuntime } from "./kubelet";
import {
  hostLink,
  lanCidr,
  MAX_PODS_PER_NODE,
  type NodePlan,
  newPrefix,
  operatorIp,
  operatorNetns,
  POD_CIDR,
  PREFIX_PATTERN,
  planNodes,
  podAddress,
  podNetns,
} from "./plan";
import { listenerArg, type PodListener } from "./pod-server";

export const DEFAULT_STATE_DIR = "/run/ui-exposure-datapath";
const PORTMAP = "/usr/lib/cni/portmap";

export interface DataPathTools {
  ip: string;
  nft: string;
  socat: string;
  curl: string;
  kubeProxy: string;
  /** Debian's portmap CNI plugin and the iptables it drives, when installed (hostPort entries). */
  portmap?: string;
}

export function findTool(name: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dirs = [...(env.PATH ?? "").split(path.delimiter), "/usr/sbin", "/sbin", "/usr/bin", "/bin"];
  for (const d of dirs) {
    if (!d) continue;
    const f = path.join(d, name);
    try {
      fs.accessSync(f, fs.constants.X_OK);
      return f;
    } catch {}
  }
  return undefined;
}

/** Effective capabilities of this process (Linux), from /proc/self/status. */
function effectiveCapabilities(): bigint {
  try {
    const m = /^CapEff:\s*([0-9a-f]+)$/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
    return m?.[1] ? BigInt(`0x${m[1]}`) : 0n;
  } catch {
    return 0n;
  }
}
const CAP_NET_ADMIN = 12n;
const CAP_SYS_ADMIN = 21n;

/**
 * Whether this machine can run the data path, and with which tools; otherwise one problem that
 * says what is missing and what to do. Creates and deletes one namespace to be sure.
 */
export function dataPathSupport(bin: string, stateDir = DEFAULT_STATE_DIR): Result<DataPathTools> {
  const no = (message: string) => failed<DataPathTools>([finding("datapath-unavailable", "error", "data path", message)]);
  if (process.platform !== "linux") return no(`the data path needs Linux network namespaces (this is ${process.platform})`);
  const caps = effectiveCapabilities();
  const has = (bit: bigint) => (caps >> bit) & 1n;
  if (!has(CAP_NET_ADMIN) || !has(CAP_SYS_ADMIN)) {
    return no(
      `the data path needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN, to create network namespaces); this process runs as uid ${process.getuid?.()} without them: run it as root`,
    );
  }
  const tools: Partial<DataPathTools> = {};
  const missing: string[] = [];
  for (const [key, name, pkg] of [
    ["ip", "ip", "iproute2"],
    ["nft", "nft", "nftables"],
    ["socat", "socat", "socat"],
    ["curl", "curl", "curl"],
  ] as const) {
    const f = findTool(name);
    if (f) tools[key] = f;
    else missing.push(`${name} (apt-get install ${pkg})`);
  }
  const kubeProxy = path.join(bin, "kube-proxy");
  if (fs.existsSync(kubeProxy)) tools.kubeProxy = kubeProxy;
  else missing.push(`${kubeProxy} (scripts/e2e-toolchain.sh builds it: stage kube-proxy)`);
  if (missing.length) return no(`the data path needs ${missing.join(", ")}`);
  if (fs.existsSync(PORTMAP) && findTool("iptables")) tools.portmap = PORTMAP;
  const probe = `${newPrefix()}-probe`;
  try {
    fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    execFileSync(tools.ip as string, ["netns", "add", probe], { stdio: "pipe" });
    execFileSync(tools.ip as string, ["netns", "del", probe], { stdio: "pipe" });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    return no(`cannot create a network namespace here: ${(e.stderr?.toString() || e.message).trim()}`);
  }
  return ok(tools as DataPathTools);
}

interface RunState {
  version: 1;
  prefix: string;
  /** The process that made the run; when it is gone the run is stale (unless detached). */
  owner: RecordedProcess;
  /** The run outlives its owner (the sandbox): stale only once none of its processes runs. */
  detached: boolean;
  /** Who the run is for (the sandbox's id): stopRun acts only for that very owner. */
  tag?: string;
  /** The host's end of the operator link, when the host is the operator (deleted with the namespace). */
  hostLink?: string;
  namespaces: string[];
  processes: RecordedProcess[];
}

export interface DataPathOptions {
  /** The Kubernetes Node names, one network namespace and one kube-proxy each. */
  nodes: readonly string[];
  /** The kubeconfig kube-proxy reads; its server must be https://127.0.0.1:<apiPort>. */
  kubeconfig: string;
  /** The API server's port on the host's 127.0.0.1. */
  apiPort: number;
  tools: DataPathTools;
  /** PEM pair of the pods' https listeners (a self-signed one). */
  tls?: { certFile: string; keyFile: string };
  stateDir?: string;
  /** Processes outlive this one (`sandbox up` returns, the data path keeps serving). */
  detached?: boolean;
  /** Recorded in the run's state: who it is for (stopRun checks it). */
  tag?: string;
  say?: (line: string) => void;
  /**
   * "host": this machine's own namespace is the operator too (a browser on the host opens the
   * URLs): one veth from it to the LAN, whose subnet is then one no route of the host uses yet,
   * and only an on-link route to that /24. Default "namespace": nothing in the host changes.
   */
  operator?: "namespace" | "host";
  /** Called with the run's prefix as soon as its state file exists (before anything is created): record it where the caller's cleanup finds it. */
  onStart?: (prefix: string) => void;
  /** Called once the nodes' addresses are known, before kube-proxy starts: register the Node objects there. */
  onNodes?: (nodes: readonly NodePlan[]) => Promise<void>;
}

export interface PodNet {
  /** `namespace/name` of the Pod object. */
  pod: string;
  node: NodePlan;
  netns: string;
  ip: string;
  listeners: PodListener[];
  process: RecordedProcess;
  /** Its number on its node (namespace, veth and address); reused once it is removed. */
  number: number;
}

/** What a request got: the status and body, or why nothing answered. */
export type Answer = { status: number; body: string } | { error: string };

const CURL_ERRORS: Readonly<Record<number, string>> = {
  6: "host not found",
  7: "connection refused",
  28: "timed out",
  35: "TLS handshake failed",
  52: "empty reply",
  56: "connection reset",
};

interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

interface RunOptions {
  input?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

function run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = execFile(
      cmd,
      [...args],
      { env: opts.env ?? process.env, timeout: opts.timeoutMs ?? 30_000, maxBuffer: 8 * 1024 * 1024, ...(opts.cwd ? { cwd: opts.cwd } : {}) },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === "number" ? ((err as { code: number }).code as number) : null) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what: string, fn: () => Promise<boolean>, timeoutMs: number, alive?: () => string | undefined): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    const dead = alive?.();
    if (dead) throw new Error(`data path: ${what}: ${dead}`);
    if (Date.now() > end) throw new Error(`data path: timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(200);
  }
}

function tail(file: string, lines = 5): string {
  try {
    const text = fs.readFileSync(file, "utf8");
    return text.trim().split("\n").slice(-lines).join("\n").slice(-1500);
  } catch {
    return "(no log)";
  }
}

function writeState(file: string, state: RunState): void {
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(state, null, 2), { mode: 0o600 });
  fs.renameSync(tmp, file);
}

/** Stops a recorded process if it is still the one we started: TERM, then KILL. */
async function stopProcess(p: RecordedProcess, graceMs = 3000): Promise<boolean> {
  if (!isOurs(p)) return false;
  try {
    process.kill(p.pid, "SIGTERM");
  } catch {
    return false;
  }
  const end = Date.now() + graceMs;
  while (isOurs(p) && Date.now() < end) await sleep(50);
  if (isOurs(p)) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {}
  }
  return true;
}

const sourceExtension = path.extname(__filename);
/** How to start pod-server: compiled (dist/, .js) or from the sources through tsx (.ts), like this module. */
function podServerCommand(): string[] {
  const script = path.join(__dirname, `pod-server${sourceExtension}`);
  const loader = sourceExtension === ".ts" ? ["--require", require.resolve("tsx/cjs")] : [];
  return [process.execPath, ...loader, script];
}

export class DataPath {
  readonly operator: string;
  readonly nodes: readonly NodePlan[];
  private readonly pods = new Map<string, PodNet>();
  /** The pod numbers in use per node (a pod's namespace, veth and address). */
  private readonly podNumbers = new Map<string, Set<number>>();
  /** The last number given per node: the next pod gets the next free one after it, wrapping (as CNI's host-local IPAM does), so a pod just deleted does not hand its address at once to the next. */
  private readonly lastPodNumber = new Map<string, number>();
  private readonly state: RunState;
  private readonly say: (line: string) => void;
  private stopped = false;

  private constructor(
    readonly prefix: string,
    /** Folder of the run: the relay's socket, the logs. */
    readonly dir: string,
    private readonly stateFile: string,
    private readonly opts: DataPathOptions,
    /** Third octet of the LAN: 198.18.<lan>.0/24. */
    readonly lan: number,
  ) {
    this.operator = operatorNetns(prefix);
    this.nodes = planNodes(prefix, opts.nodes, lan);
    this.say = opts.say ?? (() => {});
    this.state = {
      version: 1,
      prefix,
      owner: { role: "owner", pid: process.pid, cmdline: commandLineOf(process.pid) ?? "", startTime: startTimeOf(process.pid) ?? "" },
      detached: opts.detached === true,
      ...(opts.tag ? { tag: opts.tag } : {}),
      namespaces: [],
      processes: [],
    };
  }

  /** Creates the namespaces, links, relays and one kube-proxy per node; removes it all again on failure. */
  static async start(opts: DataPathOptions): Promise<DataPath> {
    const stateDir = opts.stateDir ?? DEFAULT_STATE_DIR;
    fs.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const prefix = newPrefix();
    const dir = path.join(stateDir, prefix);
    fs.mkdirSync(dir, { mode: 0o700 });
    const lan = opts.operator === "host" ? await freeLan(opts.tools.ip) : 0;
    const dp = new DataPath(prefix, dir, path.join(stateDir, `${prefix}.json`), opts, lan);
    dp.save();
    try {
      opts.onStart?.(prefix);
      await dp.build();
    } catch (err) {
      await dp.stop();
      throw err;
    }
    return dp;
  }

  node(name: string): NodePlan {
    const n = this.nodes.find((x) => x.name === name);
    if (!n) throw new Error(`data path: no node ${name}`);
    return n;
  }

  pod(name: string): PodNet {
    const p = this.pods.get(name);
    if (!p) throw new Error(`data path: no pod ${name}`);
    return p;
  }

  private save(): void {
    writeState(this.stateFile, this.state);
  }

  private ip(args: readonly string[]): Promise<void> {
    return this.must(this.opts.tools.ip, args);
  }

  private async must(cmd: string, args: readonly string[], input?: string, env?: NodeJS.ProcessEnv): Promise<void> {
    const r = await run(cmd, args, { ...(input !== undefined ? { input } : {}), ...(env ? { env } : {}) });
    if (r.code !== 0) throw new Error(`data path: ${path.basename(cmd)} ${args.join(" ")}: ${(r.stderr || r.stdout).trim() || `exit ${r.code}`}`);
  }

  private async addNetns(name: string): Promise<void> {
    // Recorded first: a crash right after `netns add` still leaves a trace the cleanup trusts.
    this.state.namespaces.push(name);
    this.save();
    await this.ip(["netns", "add", name]);
    await this.ip(["-n", name, "link", "set", "lo", "up"]);
  }

  /** Starts `cmd args` inside a namespace (or on the host), detached, logging to dir/<log>.log. */
  private async startProcess(role: string, netns: string | undefined, cmd: string, args: readonly string[], log: string): Promise<RecordedProcess> {
    const logFile = path.join(this.dir, `${log}.log`);
    const fd = fs.openSync(logFile, "a", 0o600);
    // `ip netns exec` enters the namespace and execs the command: same pid, the command's cmdline.
    const argv = netns ? ["netns", "exec", netns, cmd, ...args] : [...args];
    const child = spawn(netns ? this.opts.tools.ip : cmd, argv, { detached: true, stdio: ["ignore", fd, fd], env: process.env });
    fs.closeSync(fd);
    child.unref();
    if (child.pid === undefined) throw new Error(`data path: could not start ${role}`);
    // The start time is the fork's: known before `ip netns exec` has exec'ed the command.
    const startTime = startTimeOf(child.pid);
    if (startTime === undefined) throw new Error(`data path: ${role} exited at once: ${tail(logFile)}`);
    const rec: RecordedProcess = { role, pid: child.pid, cmdline: [cmd, ...args].join("\0"), startTime };
    this.state.processes.push(rec);
    this.save();
    let exited = false;
    child.once("exit", () => {
      exited = true;
    });
    await waitFor(
      `${role} to start`,
      async () => isOurs(rec),
      10_000,
      () => (exited ? `exited at once: ${tail(logFile)}` : undefined),
    );
    return rec;
  }

  private deadProcess(rec: RecordedProcess, log: string): () => string | undefined {
    return () => (isOurs(rec) ? undefined : `${rec.role} exited: ${tail(path.join(this.dir, `${log}.log`))}`);
  }

  /** Runs a command inside a namespace. */
  exec(netns: string, cmd: string, args: readonly string[], opts: RunOptions = {}) {
    return run(this.opts.tools.ip, ["netns", "exec", netns, cmd, ...args], opts);
  }

  private async build(): Promise<void> {
    const { tools } = this.opts;
    const t0 = Date.now();
    // The operator's namespace holds the LAN: a bridge every node is plugged into.
    await this.addNetns(this.operator);
    await this.ip(["-n", this.operator, "link", "add", "br0", "type", "bridge"]);
    const host = this.opts.operator === "host";
    // With the host as operator, its end of the link holds .1 and the namespace's bridge .2.
    await this.ip(["-n", this.operator, "addr", "add", `${host ? `198.18.${this.lan}.2` : operatorIp(this.lan)}/24`, "dev", "br0"]);
    await this.ip(["-n", this.operator, "link", "set", "br0", "up"]);
    if (host) {
      const link = hostLink(this.prefix);
      this.state.hostLink = link;
      this.save();
      await this.ip(["link", "add", link, "type", "veth", "peer", "name", "uplink", "netns", this.operator]);
      await this.ip(["-n", this.operator, "link", "set", "uplink", "master", "br0", "up"]);
      // An address on a /24 gives the host one on-link route to the LAN, and nothing else.
      await this.ip(["addr", "add", `${operatorIp(this.lan)}/24`, "dev", link]);
      await this.ip(["link", "set", link, "up"]);
    }
    for (const n of this.nodes) {
      await this.addNetns(n.netns);
      // Both ends are created inside their namespaces: nothing ever appears in the host's.
      await this.ip(["link", "add", "lan0", "netns", n.netns, "type", "veth", "peer", "name", `vn${n.index}`, "netns", this.operator]);
      await this.ip(["-n", this.operator, "link", "set", `vn${n.index}`, "master", "br0", "up"]);
      await this.ip(["-n", n.netns, "addr", "add", `${n.ip}/24`, "dev", "lan0"]);
      await this.ip(["-n", n.netns, "link", "set", "lan0", "up"]);
      await this.must(tools.ip, ["netns", "exec", n.netns, "sysctl", "-qw", "net.ipv4.ip_forward=1"]);
      // Pods of the other nodes are reached through those nodes (what a CNI's routes do).
      for (const other of this.nodes) if (other !== n) await this.ip(["-n", n.netns, "route", "add", other.podCidr, "via", other.ip, "dev", "lan0"]);
    }

    // The API server, relayed into every namespace on 127.0.0.1:<its port>.
    const sock = path.join(this.dir, "api.sock");
    const relay = await this.startProcess(
      "api relay (host)",
      undefined,
      tools.socat,
      [`UNIX-LISTEN:${sock},fork,mode=600`, `TCP:127.0.0.1:${this.opts.apiPort}`],
      "relay-host",
    );
    await waitFor("the API relay socket", async () => fs.existsSync(sock), 10_000, this.deadProcess(relay, "relay-host"));
    for (const ns of [this.operator, ...this.nodes.map((n) => n.netns)]) {
      await this.startProcess(
        `api relay (${ns})`,
        ns,
        tools.socat,
        [`TCP-LISTEN:${this.opts.apiPort},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${sock}`],
        `relay-${ns}`,
      );
    }

    // kube-proxy finds its node's addresses in the Node object: it must exist first.
    await this.opts.onNodes?.(this.nodes);
    // kube-proxy, one per node, each programming its own namespace's nftables.
    const proxies = await Promise.all(
      this.nodes.map(async (n) => {
        const rec = await this.startProcess(
          `kube-proxy (${n.name})`,
          n.netns,
          tools.kubeProxy,
          [
            "--kubeconfig",
            this.opts.kubeconfig,
            "--proxy-mode",
            "nftables",
            "--hostname-override",
            n.name,
            "--nodeport-addresses",
            lanCidr(this.lan),
            "--cluster-cidr",
            POD_CIDR,
            // 0: leave the conntrack table size alone (a global setting, not the namespace's).
            "--conntrack-max-per-core",
            "0",
            "--metrics-bind-address",
            "127.0.0.1:10249",
            "--healthz-bind-address",
            "127.0.0.1:10256",
          ],
          `kube-proxy-${n.name}`,
        );
        return { n, rec };
      }),
    );
    await Promise.all(
      proxies.map(({ n, rec }) =>
        waitFor(
          `kube-proxy on ${n.name} to be healthy`,
          async () => {
            const r = await this.exec(n.netns, tools.curl, [
              "-s",
              "--noproxy",
              "*",
              "-o",
              "/dev/null",
              "-w",
              "%{http_code}",
              "-m",
              "2",
              "http://127.0.0.1:10256/healthz",
            ]);
            return r.stdout.trim() === "200";
          },
          90_000,
          this.deadProcess(rec, `kube-proxy-${n.name}`),
        ),
      ),
    );
    this.say(
      `data path: ${this.nodes.length} node(s), kube-proxy (nftables) healthy in ${((Date.now() - t0) / 1000).toFixed(1)} s (namespaces ${this.prefix}-*)`,
    );
  }

  /**
   * A pod: its own namespace linked to its node (default route via the node, nothing else) and
   * a server process answering with `pod` on each listener. The Pod object is the caller's.
   */
  async addPod(spec: { pod: string; node: string; listeners: readonly PodListener[] }): Promise<PodNet> {
    if (this.pods.has(spec.pod)) throw new Error(`data path: pod ${spec.pod} exists`);
    const node = this.node(spec.node);
    const used = this.podNumbers.get(node.name) ?? new Set<number>();
    this.podNumbers.set(node.name, used);
    if (used.size >= MAX_PODS_PER_NODE) throw new Error(`data path: node ${node.name} holds at most ${MAX_PODS_PER_NODE} pods`);
    let k = this.lastPodNumber.get(node.name) ?? 0;
    do k = (k % MAX_PODS_PER_NODE) + 1;
    while (used.has(k));
    used.add(k);
    this.lastPodNumber.set(node.name, k);
    const netns = podNetns(this.prefix, node.index, k);
    const ip = podAddress(node, k);
    let rec: RecordedProcess | undefined;
    try {
      return await this.buildPod(spec, node, k, netns, ip, (r) => {
        rec = r;
      });
    } catch (err) {
      // Nothing half-made stays: its server, its namespace (the veth goes with it), its number.
      this.pods.delete(spec.pod);
      if (rec) await stopProcess(rec);
      if (this.state.namespaces.includes(netns)) await run(this.opts.tools.ip, ["netns", "del", netns]);
      this.state.namespaces = this.state.namespaces.filter((n) => n !== netns);
      this.state.processes = this.state.processes.filter((x) => x !== rec);
      this.save();
      used.delete(k);
      throw err;
    }
  }

  private async buildPod(
    spec: { pod: string; listeners: readonly PodListener[] },
    node: NodePlan,
    k: number,
    netns: string,
    ip: string,
    started: (rec: RecordedProcess) => void,
  ): Promise<PodNet> {
    await this.addNetns(netns);
    await this.ip(["link", "add", `vp${k}`, "netns", node.netns, "type", "veth", "peer", "name", "eth0", "netns", netns]);
    await this.ip(["-n", node.netns, "addr", "add", `${node.gateway}/32`, "dev", `vp${k}`]);
    await this.ip(["-n", node.netns, "link", "set", `vp${k}`, "up"]);
    await this.ip(["-n", node.netns, "route", "add", `${ip}/32`, "dev", `vp${k}`, "src", node.gateway]);
    await this.ip(["-n", netns, "addr", "add", `${ip}/32`, "dev", "eth0"]);
    await this.ip(["-n", netns, "link", "set", "eth0", "up"]);
    await this.ip(["-n", netns, "route", "add", node.gateway, "dev", "eth0", "scope", "link"]);
    await this.ip(["-n", netns, "route", "add", "default", "via", node.gateway, "dev", "eth0"]);
    const [cmd, ...pre] = podServerCommand() as [string, ...string[]];
    const tls = this.opts.tls;
    const log = `pod-${spec.pod.replace(/[^a-zA-Z0-9.-]/g, "_")}`;
    const rec = await this.startProcess(
      `pod ${spec.pod}`,
      netns,
      cmd,
      [...pre, spec.pod, tls?.certFile ?? "-", tls?.keyFile ?? "-", ...spec.listeners.map(listenerArg)],
      log,
    );
    started(rec);
    const pod: PodNet = { pod: spec.pod, node, netns, ip, listeners: [...spec.listeners], process: rec, number: k };
    this.pods.set(spec.pod, pod);
    // Ready when its node reaches every listener over the veth (what a readiness probe sees).
    await Promise.all(
      spec.listeners.map((l) =>
        waitFor(
          `pod ${spec.pod} to listen on ${l.port}`,
          async () => {
            const a = await this.request(`${l.tls ? "https" : "http"}://${ip}:${l.port}/`, { from: node.netns, timeoutMs: 2000 });
            return "status" in a;
          },
          30_000,
          this.deadProcess(rec, log),
        ),
      ),
    );
    return pod;
  }

  /** Stops a pod's server and removes its namespace (the node's end of the veth goes with it). */
  async removePod(name: string): Promise<void> {
    const p = this.pod(name);
    await stopProcess(p.process);
    await this.ip(["netns", "del", p.netns]);
    this.state.namespaces = this.state.namespaces.filter((n) => n !== p.netns);
    this.state.processes = this.state.processes.filter((x) => x !== p.process);
    this.save();
    this.pods.delete(name);
    this.podNumbers.get(p.node.name)?.delete(p.number);
  }

  /** The node agent's runtime (src/adapters/datapath/kubelet.ts): a pod is a namespace, a server and its hostPorts. */
  runtime(): PodRuntime {
    return {
      start: async (pod) => {
        const net = await this.addPod({ pod: pod.id, node: pod.node, listeners: pod.listeners });
        if (pod.hostPorts.length) await this.addHostPorts(pod.id, pod.hostPorts);
        return { ip: net.ip };
      },
      stop: async (id) => {
        if (this.pods.has(id)) await this.removePod(id);
      },
    };
  }

  /**
   * hostPorts of a pod, through Debian's portmap CNI plugin called as a kubelet's CNI runtime
   * calls it on ADD: the mappings as runtimeConfig.portMappings, the pod's interface and address
   * as prevResult. It programs the node namespace's netfilter (iptables-nft), which goes with it.
   */
  async addHostPorts(name: string, mappings: readonly { hostPort: number; containerPort: number }[]): Promise<void> {
    const { portmap } = this.opts.tools;
    if (!portmap) throw new Error(`data path: hostPorts need ${PORTMAP} and iptables (apt-get install containernetworking-plugins iptables)`);
    const p = this.pod(name);
    const config = {
      cniVersion: "1.0.0",
      name: "ui-exposure-e2e",
      type: "portmap",
      capabilities: { portMappings: true },
      snat: true,
      runtimeConfig: { portMappings: mappings.map((m) => ({ hostPort: m.hostPort, containerPort: m.containerPort, protocol: "tcp" })) },
      prevResult: {
        cniVersion: "1.0.0",
        interfaces: [{ name: "eth0", sandbox: `/run/netns/${p.netns}` }],
        ips: [{ address: `${p.ip}/32`, gateway: p.node.gateway, interface: 0 }],
      },
    };
    const env = {
      ...process.env,
      CNI_COMMAND: "ADD",
      CNI_CONTAINERID: p.netns,
      CNI_NETNS: `/run/netns/${p.netns}`,
      CNI_IFNAME: "eth0",
      CNI_PATH: path.dirname(portmap),
    };
    const r = await this.exec(p.node.netns, portmap, [], { input: JSON.stringify(config), env });
    if (r.code !== 0) throw new Error(`data path: portmap ADD for ${name}: ${(r.stdout || r.stderr).trim()}`);
  }

  /** A GET from inside a namespace (default: the operator's), certificates not verified. */
  async request(url: string, opts: { from?: string; timeoutMs?: number } = {}): Promise<Answer> {
    const seconds = String((opts.timeoutMs ?? 3000) / 1000);
    // --noproxy: a proxy from the environment must never carry a request out of the namespace.
    const r = await this.exec(opts.from ?? this.operator, this.opts.tools.curl, ["-sk", "--noproxy", "*", "-m", seconds, "-w", "\n%{http_code}", url], {
      timeoutMs: (opts.timeoutMs ?? 3000) + 5000,
    });
    if (r.code !== 0) return { error: CURL_ERRORS[r.code ?? -1] ?? `curl exit ${r.code}: ${r.stderr.trim()}` };
    const cut = r.stdout.lastIndexOf("\n");
    return { status: Number(r.stdout.slice(cut + 1)), body: r.stdout.slice(0, cut) };
  }

  /** Stops every process and deletes every namespace of the run; safe to call twice. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await removeRun(this.state, this.opts.tools.ip);
    fs.rmSync(this.dir, { recursive: true, force: true });
    fs.rmSync(this.stateFile, { force: true });
  }
}

/** Stops a run's processes (only those still ours) and deletes its namespaces (only those with its prefix). */
async function removeRun(state: RunState, ip: string): Promise<string[]> {
  const removed: string[] = [];
  await Promise.all(
    [...state.processes].reverse().map(async (p) => {
      if (await stopProcess(p)) removed.push(`${p.role} (${p.pid})`);
    }),
  );
  const existing = new Set(
    (await run(ip, ["netns", "list"])).stdout
      .split("\n")
      .map((l) => l.split(" ")[0])
      .filter(Boolean),
  );
  for (const ns of [...state.namespaces].reverse()) {
    if (!ns.startsWith(`${state.prefix}-`) || !existing.has(ns)) continue;
    await run(ip, ["netns", "del", ns]);
    removed.push(`netns ${ns}`);
  }
  // Gone with its peer in the operator namespace; deleted here if that failed half-way.
  if (state.hostLink === hostLink(state.prefix) && (await run(ip, ["link", "show", state.hostLink])).code === 0) {
    await run(ip, ["link", "del", state.hostLink]);
    removed.push(`link ${state.hostLink}`);
  }
  return removed;
}

/** A LAN number (198.18.<n>.0/24, n in 1..254) no address or route of the host uses yet. */
async function freeLan(ip: string): Promise<number> {
  const used = new Set<number>();
  for (const args of [
    ["-4", "route", "show"],
    ["-4", "addr", "show"],
  ]) {
    for (const m of (await run(ip, args)).stdout.matchAll(/\b198\.18\.(\d{1,3})\./g)) used.add(Number(m[1]));
  }
  const free = Array.from({ length: 254 }, (_, i) => i + 1).filter((n) => !used.has(n));
  const pick = free[Math.floor(Math.random() * free.length)];
  if (pick === undefined) throw new Error("data path: every 198.18.<n>.0/24 is in use on this host");
  return pick;
}

/**
 * Stops the run `prefix` from another process than the one that started it (`sandbox down`):
 * only what its state file names, checked as for a stale run.
 */
export async function stopRun(tools: Pick<DataPathTools, "ip">, prefix: string, tag: string, stateDir = DEFAULT_STATE_DIR): Promise<string[]> {
  const state = readRun(prefix, stateDir);
  // Another owner's run (a record naming someone else's prefix) is never touched.
  if (!state || state.tag !== tag) return [];
  const removed = await removeRun(state, tools.ip);
  fs.rmSync(path.join(stateDir, prefix), { recursive: true, force: true });
  fs.rmSync(path.join(stateDir, `${prefix}.json`), { force: true });
  return removed;
}

/** The state of run `prefix`: a plain file of this user, checked; undefined otherwise. */
function readRun(prefix: string, stateDir: string): RunState | undefined {
  if (!PREFIX_PATTERN.test(prefix)) return undefined;
  const file = path.join(stateDir, `${prefix}.json`);
  try {
    const st = fs.lstatSync(file);
    if (st.isFile() && st.uid === process.getuid?.() && st.size <= 4 * 1024 * 1024) return parseState(fs.readFileSync(file, "utf8"), prefix);
  } catch {}
  return undefined;
}

/** The processes of run `prefix` (for `tag` only) and whether each still runs; undefined when there is no such run. */
export function runProcesses(prefix: string, tag: string, stateDir = DEFAULT_STATE_DIR): { role: string; pid: number; running: boolean }[] | undefined {
  const state = readRun(prefix, stateDir);
  if (!state || state.tag !== tag) return undefined;
  return state.processes.map((p) => ({ role: p.role, pid: p.pid, running: isOurs(p) }));
}

/** A state file read back: untrusted, so every field is checked before anything is acted on. */
function parseState(text: string, prefix: string): RunState | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  const s = v as RunState;
  if (typeof s !== "object" || s === null || s.version !== 1 || s.prefix !== prefix || typeof s.detached !== "boolean") return undefined;
  if (s.tag !== undefined && (typeof s.tag !== "string" || !/^[0-9a-f]{32}$/.test(s.tag))) return undefined;
  // The sandbox's own check of process records (integer pid > 1, start time, command line).
  const owner = parseRecordedProcesses([s.owner]);
  const processes = parseRecordedProcesses(s.processes);
  if (owner.rejected.length || processes.rejected.length || !Array.isArray(s.processes)) return undefined;
  if (!Array.isArray(s.namespaces)) return undefined;
  // Only the run's own names are ever acted on; a foreign name in the list is dropped, not a
  // reason to leave the run's own namespaces behind.
  const namespaces = s.namespaces.filter((n): n is string => typeof n === "string" && n.startsWith(`${prefix}-`) && /^[a-z0-9-]+$/.test(n));
  return { ...s, namespaces, owner: owner.processes[0] as RecordedProcess, processes: processes.processes };
}

/**
 * Removes what earlier runs left behind: a run whose owner is gone (or, for a detached run, none
 * of whose processes still runs). Only namespaces its state file names and that carry its prefix
 * are deleted, only processes whose command line is still the recorded one are stopped.
 */
export async function cleanupStaleRuns(tools: Pick<DataPathTools, "ip">, stateDir = DEFAULT_STATE_DIR): Promise<string[]> {
  let files: string[];
  try {
    files = fs.readdirSync(stateDir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const f of files) {
    const prefix = f.endsWith(".json") ? f.slice(0, -5) : "";
    if (!PREFIX_PATTERN.test(prefix)) continue;
    const file = path.join(stateDir, f);
    let text: string;
    try {
      // Only a plain file of our own user: anyone else's file is not proof of anything.
      const st = fs.lstatSync(file);
      if (!st.isFile() || st.uid !== process.getuid?.()) continue;
      text = fs.readFileSync(file, "utf8");
    } catch {
      continue;
    }
    const state = parseState(text, prefix);
    if (!state) continue;
    const live = isOurs(state.owner) || (state.detached && state.processes.some(isOurs));
    if (live) continue;
    removed.push(...(await removeRun(state, tools.ip)));
    fs.rmSync(path.join(stateDir, prefix), { recursive: true, force: true });
    fs.rmSync(file, { force: true });
  }
  return removed;
}
