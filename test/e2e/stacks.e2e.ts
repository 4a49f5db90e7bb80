// Two stacks, two real API servers (issue 41): one `status` and one portal show both; the API
// server of one is killed, the other stack stays live and the dead one is marked with its cause
// within one read interval; restarted, it comes back. Both stacks publish `argocd`, and the two
// never mix. Each stack is brought up by the real `pulumi up`.
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { killApiServer, restartApiServer } from "../support/api-server";
import {
  addNodes,
  addVendoredUi,
  type Cluster,
  EXAMPLE_UIS,
  type Sandbox,
  setCiliumConfig,
  startCluster,
  startPlatform,
  stopPlatform,
  summary,
  toolchainBin,
  waitFor,
} from "../support/harness";

const STACK = (extra: Record<string, unknown>) => ({
  "kubernetes:context": "e2e",
  "ui-exposure:entries": ["argocd"],
  "ui-exposure:cilium": { mode: "cohabit" },
  ...extra,
});

let first: Cluster;
let second: Cluster;
let sandbox: Sandbox;
const secondNode = { name: "e2e-second", ip: "127.0.0.21", ready: true };

/** `pulumi ... --stack second` in the sandbox project (the harness's own commands name the `sandbox` stack). */
function pulumiSecond(args: string[]) {
  // `stack init` takes the name as its argument, and refuses --stack with it.
  const stack = args[0] === "stack" && args[1] === "init" ? [] : ["--stack", "second"];
  const r = spawnSync(path.join(toolchainBin(), "pulumi"), [...args, ...stack, "--non-interactive"], {
    cwd: sandbox.dir,
    env: sandbox.env,
    encoding: "utf8",
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return { code: r.status, stdout: r.stdout ?? "", stderr: r.stderr ?? "" };
}

async function freePort(): Promise<number> {
  return new Promise((r) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
}

interface StatusList {
  ok: boolean;
  stacks: { stack: string; ok: boolean; error?: string; entries?: { name: string; nodePort?: number; url?: string; verdict: string }[] }[];
}
const argocdOf = (doc: StatusList, stack: string) => doc.stacks.find((s) => s.stack === stack)?.entries?.find((e) => e.name === "argocd");
const liveNodePort = async (c: Cluster) => (await c.core.readNamespacedService({ namespace: "argocd", name: "argocd-nodeport" })).spec?.ports?.[0]?.nodePort;

describe.sequential("e2e: two stacks, two API servers, one status and one portal", () => {
  beforeAll(async () => {
    ({ cluster: first, sandbox } = await startPlatform({
      nodes: [{ name: "e2e-first", ip: "127.0.0.11", ready: true }],
      uis: [EXAMPLE_UIS.argocd],
      stack: STACK({}),
    }));
    second = await startCluster(toolchainBin());
    await addNodes(second, [secondNode]);
    await addVendoredUi(second, { ...EXAMPLE_UIS.argocd, node: secondNode.name });
    await setCiliumConfig(second, "true");
    const init = pulumiSecond(["stack", "init", "second", "--secrets-provider", "passphrase"]);
    expect(init.code, summary(init)).toBe(0);
    // The second stack names its own kubeconfig: its provider and every command read that cluster.
    const config = { "kubernetes:kubeconfig": second.kubeconfig, ...STACK({}) };
    const file = path.join(sandbox.dir, "Pulumi.second.yaml");
    const keep = fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => /^(secretsprovider|encryptionsalt):/.test(l));
    fs.writeFileSync(
      file,
      `${keep.join("\n")}\nconfig:\n${Object.entries(config)
        .map(([k, v]) => `  ${k}: ${JSON.stringify(v)}`)
        .join("\n")}\n`,
    );
    const upFirst = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(upFirst.code, summary(upFirst)).toBe(0);
    const upSecond = pulumiSecond(["up", "--yes", "--skip-preview"]);
    expect(upSecond.code, summary(upSecond)).toBe(0);
  }, 900_000);

  afterAll(() => {
    second?.stop();
    stopPlatform({ cluster: first, sandbox });
  });

  it("one status over both, one portal over both; a killed API server marks its stack alone, with the cause, until it is back", async () => {
    // status: one table over both stacks, each stack's argocd its own (its own cluster's nodePort).
    const both = sandbox.exposure(["status", "--stack", "sandbox", "--stack", "second", "--json"]);
    expect(both.code, summary(both)).toBe(0);
    const doc = JSON.parse(both.stdout) as StatusList;
    expect(doc.stacks.map((s) => [s.stack, s.ok])).toEqual([
      ["sandbox", true],
      ["second", true],
    ]);
    expect(argocdOf(doc, "sandbox")?.nodePort).toBe(await liveNodePort(first));
    expect(argocdOf(doc, "second")?.nodePort).toBe(await liveNodePort(second));
    expect(argocdOf(doc, "sandbox")?.url).toContain("127.0.0.11");
    expect(argocdOf(doc, "second")?.url).toContain("127.0.0.21");

    const port = await freePort();
    const portal = spawn(
      process.execPath,
      [path.join(sandbox.dir, "bin/exposure.cjs"), "portal", "--stack", "sandbox", "--stack", "second", "--listen", `127.0.0.1:${port}`],
      {
        cwd: sandbox.dir,
        env: { ...sandbox.env, PORTAL_READ_INTERVAL_SECONDS: "1", PORTAL_PROBE: "off" },
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    let log = "";
    portal.stderr?.on("data", (d) => {
      log += String(d);
    });
    const url = `http://127.0.0.1:${port}`;
    type Stacks = { stacks: { stack: string; error?: string; view?: { observedAt: string; entries: { name: string; nodePort?: number; url?: string }[] } }[] };
    const stacks = async () => (await (await fetch(`${url}/api/stacks`)).json()) as Stacks;
    try {
      const live = await waitFor("the portal to show both stacks", async () => {
        const s = await stacks();
        return s.stacks.every((x) => x.view && !x.error) ? s : undefined;
      });
      const nodePortIn = (s: Stacks, stack: string) => s.stacks.find((x) => x.stack === stack)?.view?.entries.find((e) => e.name === "argocd")?.nodePort;
      expect(nodePortIn(live, "sandbox")).toBe(argocdOf(doc, "sandbox")?.nodePort);
      expect(nodePortIn(live, "second")).toBe(argocdOf(doc, "second")?.nodePort);
      const one = async (stack: string) =>
        (await (await fetch(`${url}/api/stacks/${stack}/entries/argocd`)).json()) as { stack: string; entry: { url: string } };
      expect((await one("sandbox")).entry.url).toBe(argocdOf(doc, "sandbox")?.url);
      expect((await one("second")).entry.url).toBe(argocdOf(doc, "second")?.url);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).toContain(`ui_exposure_entry_node_port{entry="argocd",stack="sandbox",cluster="e2e"} ${argocdOf(doc, "sandbox")?.nodePort}`);
      expect(metrics).toContain(`ui_exposure_entry_node_port{entry="argocd",stack="second",cluster="e2e"} ${argocdOf(doc, "second")?.nodePort}`);

      // The second API server dies: within one read interval (1 s) its stack is stale with the cause, the first stays live.
      const argv = await killApiServer(second);
      const killedAt = Date.now();
      await new Promise((r) => setTimeout(r, 1_000));
      const dead = await stacks();
      const elapsed = Date.now() - killedAt;
      const deadOne = dead.stacks.find((s) => s.stack === "second");
      expect(deadOne?.error, JSON.stringify(dead)).toMatch(/refused|ECONNREFUSED|unreachable/i);
      expect(nodePortIn(dead, "second"), "its last rows are kept").toBe(argocdOf(doc, "second")?.nodePort);
      const firstOne = dead.stacks.find((s) => s.stack === "sandbox");
      expect(firstOne?.error).toBeUndefined();
      expect(new Date(firstOne?.view?.observedAt ?? 0).getTime(), "the first stack is read live").toBeGreaterThan(killedAt);
      const page = await (await fetch(`${url}/`)).text();
      expect(page.slice(page.indexOf('<section id="stack-second"'))).toContain('data-stale="true"');
      console.log(`[stacks.e2e] dead API server marked in ${elapsed} ms (read interval 1 s)`);

      // status over both: the first stack's rows, the second's failure on its own line, exit 1.
      const half = sandbox.exposure(["status", "--stack", "sandbox", "--stack", "second"]);
      expect(half.code, summary(half)).toBe(1);
      expect(half.stdout).toMatch(/^sandbox\s+argocd\s+nodePort/m);
      expect(half.stdout).toContain("stack second: NOT READ:");
      expect(half.stderr).toMatch(/^exposure status: stack second: /m);

      // Restarted, it comes back on the page.
      await restartApiServer(second, argv);
      const back = await waitFor(
        "the second stack to come back",
        async () => {
          const s = await stacks();
          return s.stacks.every((x) => !x.error) ? s : undefined;
        },
        30_000,
      );
      expect(nodePortIn(back, "second")).toBe(argocdOf(doc, "second")?.nodePort);
    } finally {
      portal.kill("SIGTERM");
      if (process.env.E2E_VERBOSE) console.log(log);
    }
  });
});
