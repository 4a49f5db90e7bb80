// The sandbox's forwarder, where the machine allows no network namespaces (no kube-proxy): each
// published URL `<node IP>:<nodePort>` answers like the UI behind it. Run as its own process by
// `sandbox up` (`node stand-in-servers.js <folder>/stand-ins.json`) and left running. With
// `follow`, it reads the cluster every second and answers where a node would: on the live
// nodePort of the entry's Service while it has a ready endpoint, nowhere otherwise.
import * as fs from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import { EXIT } from "../../core/findings";

export interface StandIn {
  entry: string;
  url: string;
  /** The contract's probe path and the first expected status (default `/` and 200). */
  probePath: string;
  probeStatus: number;
  /** A hostPort entry: its port is fixed (declared in the contract), never followed. */
  hostPort?: boolean;
}

export interface StandInFile {
  standIns: StandIn[];
  /** PEM key and certificate for https entries (the sandbox API server's self-signed pair). */
  tls?: { keyFile: string; certFile: string };
  /** Follow the live cluster through this kubeconfig (nodePort entries; a hostPort is fixed). */
  follow?: { kubeconfig: string; intervalMs?: number };
}

/** Our Service of an entry as read live, and how many ready endpoints its slices have. */
export interface LiveExposure {
  entry: string;
  nodePort?: number;
  readyEndpoints: number;
}

/**
 * Where each entry answers now, as a node's kube-proxy would: the live nodePort of its Service
 * while one endpoint is ready; undefined (nothing listens) when the Service is gone or has none.
 * Entries without a live record of theirs are not in the result (left as they are: hostPorts).
 */
export function livePorts(nodePortEntries: readonly string[], live: readonly LiveExposure[]): Map<string, number | undefined> {
  const out = new Map<string, number | undefined>();
  for (const entry of nodePortEntries) {
    const l = live.find((x) => x.entry === entry);
    out.set(entry, l && l.readyEndpoints > 0 ? l.nodePort : undefined);
  }
  return out;
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** What the stand-in of one entry answers: the probe path with the expected status, a page elsewhere. */
export function answer(s: StandIn, path: string): { status: number; body: string } {
  const pathname = path.split("?")[0] ?? "/";
  if (pathname === s.probePath) return { status: s.probeStatus, body: `${s.entry}: ok\n` };
  return {
    status: 200,
    body: `<!doctype html><title>${escapeHtml(s.entry)} (sandbox stand-in)</title><h1>${escapeHtml(s.entry)}</h1><p>Stand-in UI served at ${escapeHtml(s.url)} by exposure sandbox.</p>\n`,
  };
}

interface Served {
  standIn: StandIn;
  host: string;
  port: number | undefined;
  server: http.Server | https.Server;
}

function listen(served: Served, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) =>
      reject(new Error(`${served.standIn.entry}: cannot listen on ${served.host}:${port}: ${err.code ?? err.message}`));
    served.server.once("error", onError);
    served.server.listen(port, served.host, () => {
      served.server.off("error", onError);
      served.port = port;
      resolve();
    });
  });
}

function close(served: Served): Promise<void> {
  served.port = undefined;
  return new Promise<void>((resolve) => {
    served.server.close(() => resolve());
    // Connections kept alive must not keep the old port answering.
    (served.server as http.Server).closeAllConnections?.();
  });
}

/** Reads our Services and their EndpointSlices (entry label, nodePort, ready endpoints). */
async function readLive(kubeconfig: string): Promise<LiveExposure[]> {
  const lib = await import("@kubernetes/client-node");
  const kc = new lib.KubeConfig();
  kc.loadFromFile(kubeconfig);
  const [services, slices] = await Promise.all([
    kc.makeApiClient(lib.CoreV1Api).listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" }),
    kc.makeApiClient(lib.DiscoveryV1Api).listEndpointSliceForAllNamespaces({}),
  ]);
  return services.items.flatMap((svc) => {
    const entry = svc.metadata?.labels?.["ui-exposure.io/entry"];
    if (!entry) return [];
    const mine = slices.items.filter(
      (sl) => sl.metadata?.namespace === svc.metadata?.namespace && sl.metadata?.labels?.["kubernetes.io/service-name"] === svc.metadata?.name,
    );
    const readyEndpoints = mine.reduce((n, sl) => n + (sl.endpoints ?? []).filter((e) => e.conditions?.ready !== false && e.addresses.length > 0).length, 0);
    const nodePort = svc.spec?.ports?.[0]?.nodePort;
    return [{ entry, readyEndpoints, ...(nodePort ? { nodePort } : {}) }];
  });
}

export async function serveStandIns(file: StandInFile): Promise<{ stop(): Promise<void> }> {
  const tls = file.tls ? { key: fs.readFileSync(file.tls.keyFile), cert: fs.readFileSync(file.tls.certFile) } : undefined;
  const served: Served[] = file.standIns.map((s) => {
    const url = new URL(s.url);
    const handler: http.RequestListener = (req, res) => {
      const { status, body } = answer(s, req.url ?? "/");
      res.writeHead(status, { "content-type": body.startsWith("<!doctype") ? "text/html; charset=utf-8" : "text/plain" }).end(body);
    };
    const server = url.protocol === "https:" && tls ? https.createServer(tls, handler) : http.createServer(handler);
    return { standIn: s, host: url.hostname.replace(/^\[|\]$/g, ""), port: undefined, server };
  });
  await Promise.all(served.map((x) => listen(x, Number(new URL(x.standIn.url).port))));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  if (file.follow) {
    const { kubeconfig, intervalMs = 1000 } = file.follow;
    // A hostPort entry's port is declared, not allocated: left alone.
    const nodePortEntries = served.filter((x) => !x.standIn.hostPort).map((x) => x.standIn.entry);
    const tick = async () => {
      try {
        const wanted = livePorts(nodePortEntries, await readLive(kubeconfig));
        // Stopped while the cluster was read: nothing to serve any more.
        if (stopped) return;
        for (const x of served) {
          if (!wanted.has(x.standIn.entry)) continue;
          const port = wanted.get(x.standIn.entry);
          if (port === x.port) continue;
          if (x.port !== undefined) await close(x);
          if (port !== undefined) await listen(x, port).catch((err: Error) => process.stderr.write(`${err.message}\n`));
        }
      } catch (err) {
        // The API server not answering changes nothing a node serves: keep the ports as they are.
        // (Unless stopped meanwhile: the read was cut by the stop itself.)
        if (!stopped) process.stderr.write(`stand-ins: cannot read the cluster: ${(err as Error).message}\n`);
      }
      if (!stopped) timer = setTimeout(tick, intervalMs);
    };
    timer = setTimeout(tick, intervalMs);
  }
  return {
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await Promise.all(served.filter((x) => x.port !== undefined).map(close));
    },
  };
}

if (require.main === module) {
  const [fileArg] = process.argv.slice(2);
  if (!fileArg) {
    process.stderr.write("usage: stand-in-servers.ts FOLDER/stand-ins.json\n");
    process.exit(EXIT.INVALID);
  }
  const file = JSON.parse(fs.readFileSync(fileArg, "utf8")) as StandInFile;
  serveStandIns(file).then(
    () => process.stdout.write(`serving ${file.standIns.length} stand-in UI(s)\n`),
    (err: Error) => {
      process.stderr.write(`${err.message}\n`);
      process.exit(EXIT.ERROR);
    },
  );
  for (const signal of ["SIGTERM", "SIGINT"] as const) process.on(signal, () => process.exit(EXIT.OK));
}
