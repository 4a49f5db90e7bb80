// Memory is bounded by us, not by what the API server sends (issue 23 #6): against an API server
// whose every list answer is an endless JSON body, the portal answers its 503 page and `status`
// exits 1, each within a peak RSS well under the in-cluster portal's 256Mi limit. The peak is
// the kernel's high-water mark of the child (VmHWM in /proc/<pid>/status), sampled until it exits.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { makeProject, stackFile, type TestProject } from "./support/command-helpers";
import { type FakeApi, startFakeApi } from "./support/fake-api";
import { watchPeak } from "./support/memory";

const root = path.resolve(__dirname, "..");
/** Far under the portal's 256Mi limit, far above what a refusal needs (Node.js + tsx start at ~100 MiB). */
const MAX_PEAK_MIB = 200;

let api: FakeApi;
let project: TestProject;
let kubeconfig: string;
beforeAll(async () => {
  // Every path answers endlessly: the full lists `status` reads and the portal's scoped ones.
  api = await startFakeApi({}, { otherwise: "endless" });
  project = makeProject({ bench: stackFile({ "kubernetes:context": "fake" }) });
  kubeconfig = path.join(project.dir, "kubeconfig");
  fs.writeFileSync(kubeconfig, api.kubeconfig);
});
afterAll(async () => {
  await api.close();
  project.remove();
});

/** What users run: the built command and portal (dist/, built by npm ci), not the sources through tsx, whose compiler's own memory is no part of the bound. */
const builtNode = (args: string[], env: NodeJS.ProcessEnv, cwd = root) =>
  spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });

describe("kube-live: one read budget shared by every answer in flight", () => {
  it("exposure status exits 1 against endless list answers, with a bounded peak RSS", { timeout: 120_000 }, async () => {
    // The command from its sources, in this process (no build step, no wrapper process to measure instead).
    const child = builtNode([path.join(root, "bin/exposure.cjs"), "status", "--stack", "bench", "--timeout", "60"], { KUBECONFIG: kubeconfig }, project.dir);
    const r = await watchPeak(child);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/MiB/);
    expect(r.peak).toBeGreaterThan(0);
    expect(r.peak).toBeLessThan(MAX_PEAK_MIB);
  });

  it("the portal answers its 503 page against endless list answers, with a bounded peak RSS", { timeout: 120_000 }, async () => {
    const child = builtNode([path.join(root, "dist/src/portal/main.js")], {
      KUBECONFIG: kubeconfig,
      PORTAL_CONTRACT: path.join(project.dir, "contract/endpoints.yaml"),
      PORTAL_LISTEN: "127.0.0.1:0",
      PORTAL_PROBE: "off",
    });
    const page = new Promise<number>((resolve, reject) => {
      let out = "";
      child.stdout?.on("data", (d) => {
        out += d;
        const m = /portal listening on (http:\/\/\S+)/.exec(out);
        if (m) {
          out = "";
          fetch(m[1] as string).then((res) => res.text().then(() => resolve(res.status)), reject);
        }
      });
    });
    const r = await watchPeak(child, { until: page });
    expect(await page).toBe(503);
    expect(r.peak).toBeGreaterThan(0);
    expect(r.peak).toBeLessThan(MAX_PEAK_MIB);
  });
});
