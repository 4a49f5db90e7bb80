// The README's runbooks are what the runbook e2e executes: the marked blocks exist, and the
// ones it runs never send anything to a pinned production address.
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { runbookBlock } from "./support/harness";

const readme = fs.readFileSync(path.resolve(__dirname, "../README.md"), "utf8");

describe("README runbooks", () => {
  it("marks the bench and dirqual phase-1 runbooks, with the air-gapped chart step as a commented line", () => {
    const bench = runbookBlock(readme, "bench");
    expect(bench).toContain("pulumi stack select --create bench\n");
    expect(bench).toContain("# pulumi config set --path 'ui-exposure:cilium.chart.repository' https://charts.internal/cilium-mirror\n");
    // render plans the l4 release from the live one: the snapshot holds its Helm records, else render refuses (a running Cilium without its release).
    expect(bench).toContain(
      "{ kubectl get svc,nodes,pods,cm,endpointslices,ingresses,ingressclasses,daemonsets,deployments,statefulsets,replicasets,jobs,cronjobs -A -o yaml; echo ---; kubectl -n kube-system get secret -l owner=helm,name=cilium -o yaml; } > /tmp/bench.yaml",
    );
    expect(runbookBlock(readme, "dirqual")).toContain("pulumi stack select --create dirqual\n");
  });

  it("marks the sandbox's second-cluster runbook (the sandbox e2e runs it): up --second, the second's API server killed, up again", () => {
    expect(runbookBlock(readme, "sandbox-second")).toMatch(/^npm run sandbox -- --second .*\nkill .*\.sandbox\/cluster-second\/pids.*\nnpm run sandbox /);
  });

  it("keeps what needs the Lima VM or the 10.67.2.x network out of the executed blocks", () => {
    expect(runbookBlock(readme, "bench")).not.toContain("--forward");
    expect(runbookBlock(readme, "dirqual")).not.toContain("exposure probe");
    expect(runbookBlock(readme, "dirqual-workstation")).toContain("npx exposure probe --stack dirqual");
    expect(runbookBlock(readme, "bench-lima-ssh")).toContain("--forward");
  });

  it("marks the team-state runbooks (README and docs/team-state.md), none with a password in the backend URL", () => {
    const doc = fs.readFileSync(path.resolve(__dirname, "../docs/team-state.md"), "utf8");
    const blocks = [
      ...["team"].map((n) => runbookBlock(readme, n)),
      ...["team-migrate", "team-recover", "team-backup", "team-restore"].map((n) => runbookBlock(doc, n)),
    ];
    expect(runbookBlock(doc, "team-db", "sql")).toContain("ALTER TABLE pulumi_state OWNER TO ui_exposure;");
    for (const block of blocks) expect(block).not.toMatch(/postgres:\/\/[^@\s/]*:[^@\s]*@/);
    expect(runbookBlock(readme, "team")).toMatch(/^export PGPASSFILE=/m);
  });
});

describe("operator docs", () => {
  const docs = fs.readdirSync(path.resolve(__dirname, "../docs")).filter((f) => f.endsWith(".md"));
  const text = (f: string) => fs.readFileSync(path.resolve(__dirname, "../docs", f), "utf8");

  it("the README is a page for a new operator: at most 220 lines, the reference in docs/", () => {
    expect(readme.split("\n").length).toBeLessThanOrEqual(220);
  });

  it("speak of the product, not of its history: no issue numbers, no plan steps", () => {
    const history = /\bissues? #?\d+|\bstep \d+ of the plan\b|\bthis round\b/gi;
    const found = [["README.md", readme] as const, ...docs.map((f) => [`docs/${f}`, text(f)] as const)].flatMap(([f, t]) =>
      [...t.matchAll(history)].map((m) => `${f}: ${m[0]}`),
    );
    expect(found).toEqual([]);
  });
});
