// The program's plumbing against the real engine: a stack deployed by the program before the
// explicit Kubernetes provider (every resource through the default provider) moves to the
// explicit one without replacing anything, and then previews clean.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Cluster, projectDir, type Sandbox, startPlatform, stopPlatform } from "../support/harness";

const UIS = [
  { namespace: "argocd", service: "argocd-server", selector: { app: "argocd" }, portName: "http", port: 80, targetPort: 8080, podIP: "10.244.0.11" },
  { namespace: "gitea", service: "gitea-http", selector: { app: "gitea" }, portName: "http", port: 3000, targetPort: 3000, podIP: "10.244.0.12" },
];

let cluster: Cluster;
let sandbox: Sandbox;

const summary = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-3000)}`;

/** The commit before the explicit provider: its parent of the commit that added components/kubernetes-provider.ts. */
function programBeforeProvider(): string {
  const added = execFileSync("git", ["log", "--diff-filter=A", "--format=%H", "--", "components/kubernetes-provider.ts"], { cwd: projectDir, encoding: "utf8" })
    .trim()
    .split("\n")
    .pop();
  if (!added) throw new Error("cannot find the commit that added components/kubernetes-provider.ts (git history needed)");
  return `${added}^`;
}

/** Replaces the sandbox's program (index.ts, Pulumi.yaml, src, components) with the one of `rev`, or of the working tree. */
function useProgram(rev: string | undefined) {
  for (const d of ["src", "components"]) fs.rmSync(path.join(sandbox.dir, d), { recursive: true, force: true });
  const parts = ["index.ts", "Pulumi.yaml", "src", "components"];
  if (rev) {
    const tar = execFileSync("git", ["archive", "--format=tar", rev, ...parts], { cwd: projectDir, maxBuffer: 256 * 1024 * 1024 });
    execFileSync("tar", ["-x", "-C", sandbox.dir], { input: tar });
  } else {
    for (const p of parts) fs.cpSync(path.join(projectDir, p), path.join(sandbox.dir, p), { recursive: true });
  }
}

interface Step {
  op: string;
  urn: string;
  replaceReasons?: string[];
  oldState?: { inputs?: Record<string, unknown> };
  newState?: { inputs?: Record<string, unknown> };
}

/** The portal's code ConfigMap: auto-named, its content is the bundled server (and the contract). */
const PORTAL_CODE = "ui-exposure:portal:Portal$kubernetes:core/v1:ConfigMap::portal-server-code";
const content = (inputs: Record<string, unknown> | undefined) => JSON.stringify({ data: inputs?.data, binaryData: inputs?.binaryData });

/**
 * A replace that is not the provider switch's doing: the portal code ConfigMap whose content
 * (server bundle, contract) differs between the two program versions, replaced only for that
 * content (the provider replaces a ConfigMap whose data changes). Anything else is a finding.
 */
function unexplainedReplace(s: Step): string | undefined {
  const what = `${s.op} ${s.urn}`;
  if (!s.urn.endsWith(`::${PORTAL_CODE}`) || s.op !== "replace") return what;
  if (content(s.oldState?.inputs) === content(s.newState?.inputs)) return `${what}: same content, replaced anyway`;
  const reasons = s.replaceReasons ?? [];
  if (reasons.length === 0 || reasons.some((r) => !/^(data|binaryData)(\.|\[|$)/.test(r))) return `${what}: replace reasons ${JSON.stringify(reasons)}`;
  return undefined;
}

async function uidsAndPorts() {
  const list = await cluster.core.listServiceForAllNamespaces({ labelSelector: "app.kubernetes.io/managed-by=ui-exposure" });
  const portal = await cluster.core.listServiceForAllNamespaces({ fieldSelector: "metadata.name=portal" });
  return Object.fromEntries(
    [...list.items, ...portal.items].map((s) => [
      `${s.metadata?.namespace}/${s.metadata?.name}`,
      { uid: s.metadata?.uid, nodePort: s.spec?.ports?.[0]?.nodePort },
    ]),
  );
}

describe.sequential("e2e: the program's plumbing with the real engine", () => {
  beforeAll(async () => {
    ({ cluster, sandbox } = await startPlatform({
      nodes: [{ name: "e2e-node", ip: "127.0.0.11", ready: true }],
      uis: UIS,
      stack: {
        "kubernetes:context": "e2e",
        "ui-exposure:entries": ["argocd", "gitea"],
        "ui-exposure:cilium": {
          mode: "l4",
          chart: { name: path.join(__dirname, "charts/cilium"), version: "1.18.12" },
          k8sServiceHost: "127.0.0.1",
          k8sServicePort: 6443,
        },
        "ui-exposure:portal": { enabled: true, skipAwait: true },
      },
    }));
  }, 600_000);

  afterAll(() => stopPlatform({ cluster, sandbox }));

  it("a stack deployed through the default provider moves to the explicit one: nothing replaced, Services and nodePorts kept", async () => {
    useProgram(programBeforeProvider());
    const first = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(first.code, summary(first)).toBe(0);
    const before = await uidsAndPorts();
    expect(Object.keys(before).sort()).toEqual(["argocd/argocd-nodeport", "gitea/gitea-nodeport", "platform-portal/portal"]);

    useProgram(undefined);
    const preview = sandbox.pulumi(["preview", "--json"]);
    expect(preview.code, summary(preview)).toBe(0);
    const steps = (JSON.parse(preview.stdout) as { steps: Step[] }).steps;
    // Only the default provider may go (once nothing uses it); no resource is replaced or deleted
    // because of the switch. Every resource changes provider here; the one legitimate replace is
    // the portal's code ConfigMap when the portal server itself changed between the two program
    // versions (git history: it did), and then only for its data. Services, Deployment, RBAC,
    // Cilium: nothing replaced, whatever the reason.
    const replaced = steps.filter((s) => /replace|delete/.test(s.op) && !s.urn.includes("::pulumi:providers:"));
    expect(replaced.map(unexplainedReplace).filter((x) => x !== undefined)).toEqual([]);
    // The new provider is the only creation the switch brings; the other one is the portal's
    // published-outputs ConfigMap, which the older program version did not have.
    expect(
      steps
        .filter((s) => s.op === "create")
        .map((s) => s.urn.split("::").pop())
        .sort(),
    ).toEqual(["kubernetes", "portal-server-published"]);

    const second = sandbox.pulumi(["up", "--yes", "--skip-preview"]);
    expect(second.code, summary(second)).toBe(0);
    expect(await uidsAndPorts()).toEqual(before);

    // The default provider is gone from the state: every resource names the stack's own.
    const state = JSON.parse(sandbox.pulumi(["stack", "export"]).stdout) as { deployment: { resources: { urn: string; type: string; provider?: string }[] } };
    const kube = state.deployment.resources.filter((r) => r.type.startsWith("kubernetes:"));
    expect(kube.length).toBeGreaterThan(5);
    expect(kube.filter((r) => !r.provider?.includes("::pulumi:providers:kubernetes::kubernetes::")).map((r) => r.urn)).toEqual([]);

    const clean = sandbox.pulumi(["preview", "--expect-no-changes"]);
    expect(clean.code, summary(clean)).toBe(0);
  }, 600_000);
});
