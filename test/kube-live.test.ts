import { execFileSync } from "node:child_process";
import * as diagnostics from "node:diagnostics_channel";
import * as fs from "node:fs";
import type * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LiveClusterReader, READ_ATTEMPTS, RETRY_WAIT_MAX_MS, retryWaitMs } from "../src/adapters/kube-live";
import { UserError } from "../src/core/errors";
import { type FakeAnswer, fakeKubeconfig, list, startFakeApi } from "./support/fake-api";

const saved = { HOME: process.env.HOME, KUBECONFIG: process.env.KUBECONFIG };
afterEach(() => {
  process.env.HOME = saved.HOME;
  if (saved.KUBECONFIG === undefined) delete process.env.KUBECONFIG;
  else process.env.KUBECONFIG = saved.KUBECONFIG;
});

const kubeconfig = (server: string) => fakeKubeconfig(server, { context: "bench", insecure: false });

describe("LiveClusterReader.connect", () => {
  it("says there is no kubeconfig instead of inventing a localhost context", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "home-"));
    process.env.HOME = home;
    delete process.env.KUBECONFIG;
    await expect(LiveClusterReader.connect({})).rejects.toThrow(
      `no kubeconfig: KUBECONFIG is not set and ${path.join(home, ".kube", "config")} does not exist; point KUBECONFIG at the cluster's kubeconfig`,
    );
  });

  it("names the missing context and the known ones", async () => {
    await expect(LiveClusterReader.connect({ kubeconfig: kubeconfig("https://127.0.0.1:1"), context: "dirqual" })).rejects.toThrow(
      "kube context 'dirqual' is not in the kubeconfig (known: bench); set kubernetes:context in the stack file or fix KUBECONFIG",
    );
  });

  it("names the cluster (/metrics' cluster label) by the context read through, never by the server's URL; in the cluster by the name given", async () => {
    const withPassword = kubeconfig("https://admin:s3cret@127.0.0.1:1");
    expect((await LiveClusterReader.connect({ kubeconfig: withPassword })).name).toBe("bench");
    const two = `${withPassword}`.replace(
      "contexts: [{ name: bench, context: { cluster: bench, user: u } }]",
      "contexts: [{ name: bench, context: { cluster: bench, user: u } }, { name: lima-bench, context: { cluster: bench, user: u } }]",
    );
    expect((await LiveClusterReader.connect({ kubeconfig: two, context: "lima-bench" })).name).toBe("lima-bench");
    const pod = { KUBERNETES_SERVICE_HOST: process.env.KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = "127.0.0.1";
    process.env.KUBERNETES_SERVICE_PORT = "1";
    try {
      // No kube context in a pod: the name is the one `up` gives it (PORTAL_CLUSTER), not the Service address the pod reads through.
      expect((await LiveClusterReader.connect({ inCluster: true, name: "dirqual" })).name).toBe("dirqual");
    } finally {
      for (const [k, v] of Object.entries(pod)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it("a context name with a line break is shown escaped, on one line (found by an outside tester)", async () => {
    const err = await LiveClusterReader.connect({ kubeconfig: kubeconfig("https://127.0.0.1:1"), context: "lima-bench\nFAKE LINE" }).catch((e: Error) => e);
    expect((err as Error).message).toContain("kube context 'lima-bench\\x0aFAKE LINE' is not in the kubeconfig");
    expect((err as Error).message).not.toContain("\n");
  });

  it("fails in one line, at the refusal, when nothing listens at the API server's address", async () => {
    // A 600 s timeout: the read can only end here on the refused connection itself, which the message names (not the timer's "did not answer within").
    const reader = await LiveClusterReader.connect({ kubeconfig: kubeconfig("https://127.0.0.1:1"), timeoutMs: 600_000 });
    await expect(reader.listNodes()).rejects.toThrow(
      /^cluster unreachable: context bench \(https:\/\/127\.0\.0\.1:1\): ECONNREFUSED while reading nodes; check the kube context and that the API server is up$/,
    );
  });

  // Found by an outside tester: each of these printed "internal error" and a stack trace, or a
  // multi-line parser excerpt without the file's name.
  it("a client certificate that is not PEM is the kubeconfig's fault, in one line", async () => {
    const cert = kubeconfig("https://127.0.0.1:1").replace("user: { token: fake-token }", "user: { client-certificate-data: Zm9v, client-key-data: YmFy }");
    const reader = await LiveClusterReader.connect({ kubeconfig: cert, timeoutMs: 2000 });
    const failure = await reader.listNodes().then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failure?.constructor.name).toBe("UserError");
    expect(failure?.message).toMatch(
      /^cannot use the credentials of context bench \(https:\/\/127\.0\.0\.1:1\): .+; check the kubeconfig's certificate and key data$/,
    );
    expect(failure?.message).not.toContain("\n");
  });

  it("an empty, non-YAML or non-kubeconfig file is named, in one line", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kubeconfig-"));
    for (const [name, content] of [
      ["empty.yaml", ""],
      ["broken.yaml", "clusters: [\n  - name: c\n   bad: indentation\n"],
    ] as const) {
      const file = path.join(dir, name);
      fs.writeFileSync(file, content);
      const failure = await LiveClusterReader.connect({ kubeconfig: file }).then(
        () => undefined,
        (err: Error) => err,
      );
      expect(failure?.constructor.name, name).toBe("UserError");
      expect(failure?.message, name).toMatch(new RegExp(`^cannot load kubeconfig ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}: .+`));
      expect(failure?.message, name).not.toContain("\n");
      expect(failure?.message, name).not.toContain("Cannot read properties");
    }
  });

  it("a kubeconfig that is a device or a FIFO is refused before it is read, from the stack or KUBECONFIG (found by an outside tester)", async () => {
    const fifo = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kubeconfig-fifo-")), "kc");
    execFileSync("mkfifo", [fifo]);
    const refused = (target: Parameters<typeof LiveClusterReader.connect>[0]) =>
      LiveClusterReader.connect(target).then(
        () => undefined,
        (err: Error) => err,
      );
    expect((await refused({ kubeconfig: "/dev/zero", context: "x" }))?.message).toBe("cannot load kubeconfig /dev/zero: it is a device; give a regular file");
    expect((await refused({ kubeconfig: fifo }))?.message).toBe(`cannot load kubeconfig ${fifo}: it is a pipe; give a regular file`);
    process.env.KUBECONFIG = `${path.join(os.tmpdir(), "no-such-kubeconfig")}${path.delimiter}/dev/zero`;
    const fromEnv = await refused({ context: "x" });
    expect(fromEnv).toBeInstanceOf(UserError);
    expect(fromEnv?.message).toBe("cannot load kubeconfig /dev/zero: it is a device; give a regular file");
  }, 10_000);

  it("a kubeconfig path that is a folder says so, not EISDIR (found by an outside tester)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kubeconfig-dir-"));
    const failure = await LiveClusterReader.connect({ kubeconfig: dir }).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(failure?.message).toBe(`cannot load kubeconfig ${dir}: it is a folder, not a kubeconfig file`);
  });
});

describe("retryWaitMs", () => {
  it("waits what Retry-After says (seconds or a date), else backs off, within bounds", () => {
    expect(retryWaitMs("1", 1)).toBe(1000);
    expect(retryWaitMs("0", 1)).toBe(100);
    expect(retryWaitMs("3600", 1)).toBe(RETRY_WAIT_MAX_MS);
    expect(retryWaitMs(new Date(10_000 + 2000).toUTCString(), 1, 10_000)).toBe(2000);
    expect([1, 2, 3].map((n) => retryWaitMs(undefined, n))).toEqual([250, 500, 1000]);
    expect(retryWaitMs("soon", 2)).toBe(500);
  });
});

describe("the live reader against a fake API server on loopback", () => {
  it("reads again after HTTP 429 (a just-created CRD's storage initialising), after the wait Retry-After names", async () => {
    const initialising = { status: 429, headers: { "retry-after": "1" }, body: { kind: "Status", code: 429, message: "storage is (re)initializing" } };
    const api = await startFakeApi({
      "/apis/cilium.io/v2/ciliumloadbalancerippools": [initialising, initialising, list("CiliumLoadBalancerIPPoolList", [{ metadata: { name: "pool" } }])],
    });
    // The wait between tries is a timer on a fake clock (the HTTP exchange stays real): each retry goes out when 1000 ms of it have passed, not one before.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 5000 });
      const pools = reader.listCustom({ group: "cilium.io", versions: ["v2"], plural: "ciliumloadbalancerippools", kind: "CiliumLoadBalancerIPPool" });
      for (const tries of [1, 2]) {
        // The answer read, the wait set.
        await vi.waitFor(() => expect(vi.getTimerCount()).toBe(1));
        expect(api.requests).toHaveLength(tries);
        await vi.advanceTimersByTimeAsync(999);
        expect(api.requests).toHaveLength(tries);
        await vi.advanceTimersByTimeAsync(1);
        await vi.waitFor(() => expect(api.requests).toHaveLength(tries + 1));
      }
      expect((await pools).map((p) => p.metadata.name)).toEqual(["pool"]);
      expect(api.requests).toHaveLength(3);
    } finally {
      vi.useRealTimers();
      await api.close();
    }
  });

  it("gives up on HTTP 429 after a few tries, or before the read's timeout, with what to do", async () => {
    const api = await startFakeApi({ "/api/v1/services": { status: 429, headers: { "retry-after": "0" }, body: {} } });
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 5000 });
      await expect(reader.listServices()).rejects.toThrow(
        new RegExp(`answered services with HTTP 429 \\(too many requests\\) ${READ_ATTEMPTS} times in [0-9.]+s: .*run again in a moment$`),
      );
      expect(api.requests).toHaveLength(READ_ATTEMPTS);
      const slow = await startFakeApi({ "/api/v1/services": { status: 429, headers: { "retry-after": "2" }, body: {} } });
      try {
        const quick = await LiveClusterReader.connect({ kubeconfig: slow.kubeconfig, timeoutMs: 1000 });
        await expect(quick.listServices()).rejects.toThrow("HTTP 429 (too many requests) 1 time in");
        expect(slow.requests).toHaveLength(1);
      } finally {
        await slow.close();
      }
    } finally {
      await api.close();
    }
  });

  it("leaves no connection open after an API server that never answers (200 page loads)", async () => {
    const api = await startFakeApi({ "/api/v1/services": "hang", "/api/v1/nodes": "hang", "/apis/discovery.k8s.io/v1/endpointslices": "hang" });
    // Every socket the reader opens, as it is created: each one is destroyed by the time its read has failed, connected or still connecting (one left
    // connecting would show up at the server later). Counted, not waited for.
    const sockets: net.Socket[] = [];
    const opened = (message: unknown) => sockets.push((message as { socket: net.Socket }).socket);
    diagnostics.subscribe("net.client.socket", opened);
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 300 });
      const loads = Array.from({ length: 200 }, () =>
        reader.listServices().then(
          () => "answered",
          (err: Error) => err.message,
        ),
      );
      const results = await Promise.all(loads);
      expect(new Set(results)).toEqual(new Set([`cluster unreachable: ${reader.source} did not answer services within 0.3s`]));
      expect(sockets.length).toBeGreaterThan(0);
      expect(sockets.filter((s) => !s.destroyed)).toHaveLength(0);
      // The server then sees each of them close: no deadline, every socket it accepted is one destroyed above.
      while ((await api.openConnections()) > 0) await new Promise((r) => setImmediate(r));
    } finally {
      diagnostics.unsubscribe("net.client.socket", opened);
      await api.close();
    }
  });

  it.each([
    ["items: null", list("ServiceList", null), "items: expected an array, found null"],
    ["a bare array", { body: [1, 2] }, "expected a ServiceList (a map with items), found an array"],
    ["an object without metadata", list("ServiceList", [{ spec: {} }]), "items[0].metadata: required field is missing"],
    ["a null item", list("ServiceList", [null]), "items[0]: expected a Kubernetes object (a map), found null"],
    [
      "ports as a string",
      list("ServiceList", [{ metadata: { name: "a", namespace: "b" }, spec: { ports: "80" } }]),
      'items[0].spec.ports: expected an array, found a string ("80")',
    ],
    [
      "a selector that is not a string map",
      list("ServiceList", [{ metadata: { name: "a" }, spec: { selector: ["x"] } }]),
      "items[0].spec.selector: expected a map, found an array",
    ],
    ["not JSON", { raw: true, body: "{nope" }, "with something that is not JSON"],
  ] as const)("refuses an answer with %s, cleanly", async (_name, answer, fragment) => {
    const api = await startFakeApi({ "/api/v1/services": answer as FakeAnswer });
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 2000 });
      const err = await reader.listServices().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toContain(fragment);
    } finally {
      await api.close();
    }
  });

  // Found by the sandbox's monitoring trial: with its Service's pods gone, the real API server
  // (1.37) writes the slice with `endpoints: null` and `ports: null`, and every read failed.
  it("reads the EndpointSlice of a Service without endpoints as the API server writes it (endpoints and ports null)", async () => {
    const empty = { metadata: { name: "grafana-nodeport-dcptd", namespace: "monitoring" }, addressType: "IPv4", endpoints: null, ports: null };
    const api = await startFakeApi({ "/apis/discovery.k8s.io/v1/namespaces/monitoring/endpointslices": list("EndpointSliceList", [empty]) });
    try {
      const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 2000 });
      const slices = await reader.listEndpointSlices({ namespace: "monitoring" });
      expect(slices.map((s) => [s.metadata.name, s.endpoints ?? [], s.ports ?? []])).toEqual([["grafana-nodeport-dcptd", [], []]]);
    } finally {
      await api.close();
    }
  });

  it("never echoes a fragment of a corrupt Secrets answer", async () => {
    const value = Buffer.from("super-secret-value").toString("base64");
    const truncated = `{"kind":"SecretList","items":[{"metadata":{"name":"s"},"data":{"password":"${value}`;
    const wrongType = { kind: "SecretList", items: [{ metadata: { name: "s" }, data: { password: value, other: 12345 } }] };
    for (const answer of [{ raw: true, body: truncated } as const, { body: wrongType }]) {
      const api = await startFakeApi({ "/api/v1/namespaces/argocd/secrets": answer });
      try {
        const reader = await LiveClusterReader.connect({ kubeconfig: api.kubeconfig, timeoutMs: 2000 });
        const err = (await reader.listSecrets("argocd").then(
          () => undefined,
          (e: unknown) => e,
        )) as Error;
        expect(err).toBeInstanceOf(UserError);
        expect(err.message).not.toContain(value.slice(0, 8));
        expect(err.message).not.toContain("12345");
      } finally {
        await api.close();
      }
    }
  });
});
