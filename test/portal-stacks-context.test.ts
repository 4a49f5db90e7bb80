// `exposure portal` over several stacks when one stack's kube context is not in the kubeconfig:
// that stack is shown with its cause, the others are served (as `status --all-stacks` does).
// Failed when written (r10-tester): the whole portal exited 1 on the one bad stack file.
import * as fs from "node:fs";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeKubeconfig } from "./support/fake-api";
import { PORTAL_TEST_CONTRACT, recordedCluster } from "./support/portal-fixtures";
import { startProcess } from "./support/processes";
import { recordedApiServer } from "./support/recorded-api";

const bin = path.join(path.resolve(__dirname, ".."), "bin", "exposure.cjs");

describe("exposure portal --all-stacks with one stack's kube context missing", () => {
  const api = recordedApiServer(recordedCluster());
  let project: string;
  let kubeconfig: string;

  beforeAll(async () => {
    await new Promise<void>((r) => api.server.listen(0, "127.0.0.1", r));
    project = fs.mkdtempSync(path.join(os.tmpdir(), "portal-stacks-context-"));
    kubeconfig = writeKubeconfig(project, (api.server.address() as AddressInfo).port);
    fs.writeFileSync(path.join(project, "Pulumi.yaml"), "name: ui-exposure\nruntime: nodejs\n");
    fs.writeFileSync(path.join(project, "contract.yaml"), PORTAL_TEST_CONTRACT);
    const stackFile = (context: string) =>
      `config:\n  kubernetes:kubeconfig: ${kubeconfig}\n  kubernetes:context: ${context}\n  ui-exposure:contract: contract.yaml\n  ui-exposure:entries: [argocd]\n  ui-exposure:cilium: { mode: cohabit }\n`;
    // A workstation that holds bench's context but not production's: the README's two stack files, in small.
    fs.writeFileSync(path.join(project, "Pulumi.good.yaml"), stackFile("fake"));
    fs.writeFileSync(path.join(project, "Pulumi.elsewhere.yaml"), stackFile("no-such-context"));
  });
  afterAll(async () => {
    await new Promise((r) => api.server.close(r));
    fs.rmSync(project, { recursive: true, force: true });
  });

  it("serves the stack it can read and names the other's cause", async () => {
    const p = await startProcess([bin, "portal", "--all-stacks", "--listen", "127.0.0.1:0"], {
      cwd: project,
      env: { KUBECONFIG: path.join(project, "absent"), PATH: path.dirname(process.execPath), PORTAL_PROBE: "off" },
      announce: /^portal: (http:\/\/127\.0\.0\.1:\d+\/)/m,
      timeoutMs: 20_000,
    });
    try {
      const doc = (await (await fetch(new URL("/api/stacks", p.url))).json()) as { stacks: { stack: string; error?: string; view?: unknown }[] };
      const byName = new Map(doc.stacks.map((s) => [s.stack, s]));
      expect(byName.get("good")?.view).toBeDefined();
      expect(byName.get("elsewhere")?.error).toContain("no-such-context");
      // The page and /metrics answer too: the unread stack is a section with its cause, not a failed request.
      const page = await fetch(new URL("/", p.url));
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("no-such-context");
      expect((await fetch(new URL("/metrics", p.url))).status).toBe(200);
    } finally {
      p.child.kill("SIGTERM");
    }
  });
});
