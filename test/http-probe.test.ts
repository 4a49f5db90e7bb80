import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type HttpGet, httpGet, probeAll, probeOne, probeTargets } from "../src/adapters/http-probe";
import { parseContract } from "../src/core/contract/parse";
import { closedPort, HANG_PATH, type LocalServer, startServer, TEST_CONTRACT } from "./support/command-helpers";
import { contractError } from "./support/fixtures";

let server: LocalServer;
let refusedPort = 0;
beforeAll(async () => {
  refusedPort = await closedPort();
  server = await startServer({
    "/ok": { status: 200 },
    // Points at a closed port: following it would fail, so an "ok" proves it is not followed.
    "/moved": { status: 302, location: `http://127.0.0.1:${refusedPort}/elsewhere` },
    "/broken": { status: 500 },
  });
});
afterAll(() => server.close());

const target = (pathname: string, extra: { expectStatus?: number[]; timeoutMs?: number; url?: string } = {}) => ({
  name: "ui",
  url: extra.url ?? server.url,
  path: pathname,
  timeoutMs: extra.timeoutMs ?? 2000,
  ...(extra.expectStatus ? { expectStatus: extra.expectStatus } : {}),
});

describe("probeOne against real HTTP servers on 127.0.0.1", () => {
  it("accepts a 200 and measures the latency: the clock read before the request and after its answer", async () => {
    // A clock that moves 42.4 ms between its two reads: the latency is that difference, rounded.
    const clock = [1000, 1042.4];
    const r = await probeOne(target("/ok"), httpGet, () => clock.shift() as number);
    expect(r).toMatchObject({ name: "ui", url: `${server.url}/ok`, ok: true, status: 200, expected: "2xx/3xx", latencyMs: 42 });
    expect(clock).toEqual([]);
    expect(r.error).toBeUndefined();
  });

  it("accepts a 302 by default without following it, and shows where it points", async () => {
    const r = await probeOne(target("/moved"));
    expect(r).toMatchObject({ ok: true, status: 302, location: `http://127.0.0.1:${refusedPort}/elsewhere` });
  });

  it("rejects a 302 when the contract expects 200", async () => {
    const r = await probeOne(target("/moved", { expectStatus: [200] }));
    expect(r).toMatchObject({ ok: false, status: 302, expected: "200", error: "expected 200, got 302" });
  });

  it("rejects a 500", async () => {
    expect(await probeOne(target("/broken"))).toMatchObject({ ok: false, status: 500, error: "expected 2xx/3xx, got 500" });
  });

  it("reports a closed port as refused", async () => {
    const r = await probeOne(target("/", { url: `http://127.0.0.1:${refusedPort}` }));
    expect(r).toMatchObject({ ok: false, error: "connection refused (nothing listens on that port)" });
    expect(r.status).toBeUndefined();
  });

  it("gives up after the timeout when the server never answers", async () => {
    // The server never answers: only the probe's own timer ends the request, and its error says so.
    const r = await probeOne(target(HANG_PATH, { timeoutMs: 300 }));
    expect(r).toMatchObject({ ok: false, error: "no answer within 0.3s" });
    // Not before the timeout (a lower bound: load only makes it later).
    expect(r.latencyMs).toBeGreaterThanOrEqual(290);
  });

  it("says a malformed HTTP answer in a sentence that keeps Node's parser code (found by an outside tester)", async () => {
    // A redirect whose Location holds a terminal escape: Node's parser refuses the header.
    const raw = net.createServer((c) => {
      c.on("error", () => {});
      c.once("data", () => c.end("HTTP/1.1 302 Found\r\nLocation: http://x/\x1b[31m\r\nContent-Length: 0\r\n\r\n"));
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = raw.address() as net.AddressInfo;
      const r = await probeOne(target("/", { url: `http://127.0.0.1:${port}` }));
      expect(r).toMatchObject({ ok: false, error: "malformed HTTP answer (HPE_INVALID_HEADER_TOKEN)" });
    } finally {
      raw.close();
    }
  });

  it("does not probe a URL whose nodePort was never allocated, nor a non-http URL", async () => {
    expect(await probeOne(target("/", { url: "http://127.0.0.1:<nodePort allocated on apply>" }))).toMatchObject({
      ok: false,
      error: "the stack outputs hold no allocated nodePort for it (run pulumi up)",
    });
    expect(await probeOne(target("/", { url: "postgresql://127.0.0.1:5432" }))).toMatchObject({
      ok: false,
      error: "not an http(s) URL: postgresql://127.0.0.1:5432",
    });
    expect(await probeOne(target("/", { url: "not a url" }))).toMatchObject({ ok: false, error: "invalid URL 'not a url'" });
  });
});

describe("probeOne over https with a self-signed certificate", () => {
  let tlsServer: LocalServer | undefined;
  let dir = "";
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "exposure-tls-"));
    try {
      execFileSync(
        "openssl",
        ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=dashboard", "-keyout", `${dir}/key.pem`, "-out", `${dir}/cert.pem`],
        { stdio: "ignore" },
      );
    } catch {
      return; // no openssl: the test below is skipped
    }
    tlsServer = await startServer(
      { "/": { status: 200 } },
      { key: fs.readFileSync(`${dir}/key.pem`, "utf8"), cert: fs.readFileSync(`${dir}/cert.pem`, "utf8") },
    );
  });
  afterAll(async () => {
    await tlsServer?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("accepts the dashboard's self-signed certificate (reachability, not identity)", async (ctx) => {
    if (!tlsServer) ctx.skip();
    const r = await probeOne(target("/", { url: tlsServer?.url ?? "" }));
    expect(r).toMatchObject({ ok: true, status: 200 });
  });

  it("says so when an https URL reaches a plain-http server", async () => {
    const r = await probeOne(target("/ok", { url: server.url.replace("http:", "https:") }));
    expect(r).toMatchObject({ ok: false, error: "TLS handshake failed (is it plain http?)" });
  });
});

describe("probeAll", () => {
  it("probes concurrently, at most N at a time, and keeps the targets' order", async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const slowGet: HttpGet = async (url) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      return { status: url.pathname === "/b" ? 500 : 200 };
    };
    const targets = ["a", "b", "c", "d", "e"].map((n) => ({ name: n, url: "http://127.0.0.1:1", path: `/${n}`, timeoutMs: 1000 }));
    const results = await probeAll(targets, { concurrency: 2, get: slowGet });
    expect(results.map((r) => `${r.name}:${r.ok}`)).toEqual(["a:true", "b:false", "c:true", "d:true", "e:true"]);
    expect(maxInFlight).toBe(2);
  });

  it("really runs in parallel against real servers (five hanging URLs are all requested before the first timeout)", async () => {
    const targets = Array.from({ length: 5 }, (_, i) => ({ name: `u${i}`, url: server.url, path: HANG_PATH, timeoutMs: 300 }));
    // The real GET, counted: five requests in flight at once means they wait out one timeout together, not five in turn.
    let inFlight = 0;
    let maxInFlight = 0;
    const counted: HttpGet = async (url, timeoutMs) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await httpGet(url, timeoutMs);
      } finally {
        inFlight--;
      }
    };
    const results = await probeAll(targets, { concurrency: 5, get: counted });
    expect(results.every((r) => r.error === "no answer within 0.3s")).toBe(true);
    expect(maxInFlight).toBe(5);
  });
});

describe("probeTargets", () => {
  it("takes path, statuses and timeout from the contract, defaults elsewhere", () => {
    const contract = parseContract(
      TEST_CONTRACT.replace("probe: { path: /healthz, expectStatus: [200] }", "probe: { path: /healthz, expectStatus: [200], timeoutSeconds: 2 }"),
      "c.yaml",
    );
    expect(probeTargets({ argocd: "http://127.0.0.2:31001", gitea: "http://127.0.0.2:31002", extra: "http://127.0.0.2:31009" }, contract, 5000)).toEqual([
      { name: "argocd", url: "http://127.0.0.2:31001", path: "/healthz", expectStatus: [200], timeoutMs: 2000 },
      { name: "gitea", url: "http://127.0.0.2:31002", path: "/", timeoutMs: 5000 },
      { name: "extra", url: "http://127.0.0.2:31009", path: "/", timeoutMs: 5000 },
    ]);
  });
});

describe("a probe path is a path", () => {
  it.each([
    ["//other-host:8080/x", "must not start with '//'"],
    ["http://other-host/x", "must start with '/'"],
    ["/a\\b", "backslash"],
    ["/ok//x", "'//'"],
  ])("refuses probe.path %s in the contract", (path, fragment) => {
    const message = contractError(`version: 1
endpoints:
  - name: a
    exposed: true
    service: { namespace: a, name: a, port: http }
    probe: { path: ${JSON.stringify(path)} }
`);
    expect(message).toContain("endpoints[0].probe.path");
    expect(message).toContain(fragment);
  });

  it("never requests another host, whatever path it is given", async () => {
    const requested: string[] = [];
    const r = await probeOne({ name: "a", url: "http://127.0.0.2:31001", path: "//127.0.0.3:9/x", timeoutMs: 1000 }, async (url) => {
      requested.push(url.href);
      return { status: 200 };
    });
    expect(requested).toEqual([]);
    expect(r.ok).toBe(false);
    expect(r.error).toContain("probe path");
  });
});
