// The example contract against the real upstream charts (test/data/charts, rendered by
// scripts/render-charts.sh): every Service it names exists with the port it names, and that
// port's targetPort (named, numeric or unset) reaches a container port of the pods it selects.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { loadContractFile } from "../src/adapters/contract-file";
import type { Endpoint, ServiceRef } from "../src/core/contract/schema";
import { indexServices, planNodePort } from "../src/core/plan";
import { type ChartFixture, readAllChartFixtures, readChartFixture, type Workload } from "./support/chart-fixtures";

const projectDir = path.resolve(__dirname, "..");
const contract = loadContractFile(path.join(projectDir, "contract/endpoints.example.yaml"));

/** Which rendered chart backs each entry of the example contract, or why none does. */
const BACKED_BY: Record<string, string> = {
  argocd: "argo-cd.yaml",
  grafana: "kube-prometheus-stack.yaml",
  gitea: "gitea.yaml",
  mlflow: "mlflow.yaml",
  "marquez-web": "marquez.yaml",
  openlineage: "marquez.yaml",
  "k8s-dashboard": "kubernetes-dashboard.yaml",
};
const NOT_BACKED: Record<string, string> = {
  dagster: "helm/dagster could not be mirrored here (test/data/charts/README.md)",
  portal: "this project's own portal, created by the program",
  postgres: "the platform's own PostgreSQL, no upstream chart named",
  registry: "the platform's own registry, no upstream chart named",
};

const matches = (labels: Record<string, string> | undefined, selector: Record<string, string>) => Object.entries(selector).every(([k, v]) => labels?.[k] === v);

/**
 * What is wrong between a contract entry and a chart's objects (empty: it matches). The
 * targetPort is resolved as the EndpointSlice controller does: a name is looked up among the
 * selected pods' container ports (same protocol), a number (or the port itself when unset)
 * must be a port the pods declare.
 */
function shapeProblems(entry: Endpoint & { service: ServiceRef }, fixture: Pick<ChartFixture, "services" | "workloads">): string[] {
  const plan = planNodePort(entry, indexServices(fixture.services));
  if ("problem" in plan) return [plan.problem];
  const selected: Workload[] = fixture.workloads.filter(
    (w) => w.metadata.namespace === plan.namespace && matches(w.spec.template.metadata.labels, plan.selector),
  );
  const where = `entry '${entry.name}': Service ${plan.namespace}/${plan.mirrors}`;
  if (selected.length === 0) return [`${where} selects no pod template (selector ${JSON.stringify(plan.selector)})`];
  const ports = selected.flatMap((w) => w.spec.template.spec.containers.flatMap((c) => c.ports ?? []).filter((p) => (p.protocol ?? "TCP") === plan.protocol));
  const found = typeof plan.targetPort === "string" ? ports.some((p) => p.name === plan.targetPort) : ports.some((p) => p.containerPort === plan.targetPort);
  if (!found) {
    const declared = ports.map((p) => `${p.name ?? "(unnamed)"} ${p.containerPort}`).join(", ") || "none";
    return [
      `${where}: targetPort ${JSON.stringify(plan.targetPort)} is no container port of ${selected.map((w) => w.metadata.name).join(", ")} (ports: ${declared})`,
    ];
  }
  return [];
}

const serviceEntries = contract.endpoints.filter((e): e is Endpoint & { service: ServiceRef } => e.service !== undefined);

describe("the example contract against the real charts (test/data/charts)", () => {
  it("names, for every entry with a Service, the chart that backs it or why none does", () => {
    expect(serviceEntries.map((e) => e.name).sort()).toEqual([...Object.keys(BACKED_BY), ...Object.keys(NOT_BACKED)].sort());
  });

  it.each(Object.entries(BACKED_BY))("%s matches %s", (name, file) => {
    const entry = serviceEntries.find((e) => e.name === name);
    expect(entry).toBeDefined();
    expect(shapeProblems(entry as Endpoint & { service: ServiceRef }, readChartFixture(file))).toEqual([]);
  });

  it("every rendered file names its chart, version and source commit", () => {
    for (const f of readAllChartFixtures()) expect(f.chart).toMatch(/^\S+ \d+\.\d+\.\d+$/);
  });
});

describe("the shapes the real charts have (what the fixtures must keep exercising)", () => {
  const svc = (file: string, name: string) => {
    const s = readChartFixture(file).services.find((x) => x.metadata.name === name);
    if (!s) throw new Error(`${file}: no Service ${name}`);
    return s;
  };
  it("Grafana (kube-prometheus-stack), MLflow and Marquez use a named targetPort", () => {
    expect(svc("kube-prometheus-stack.yaml", "kube-prometheus-stack-grafana").spec?.ports).toEqual([
      { name: "http-web", port: 80, protocol: "TCP", targetPort: "grafana" },
    ]);
    expect(svc("mlflow.yaml", "mlflow").spec?.ports).toEqual([{ name: "http", port: 80, protocol: "TCP", targetPort: "mlflow" }]);
    expect(svc("marquez.yaml", "marquez-web").spec?.ports?.[0]).toMatchObject({ name: "http", port: 80, targetPort: "http" });
    expect(svc("marquez.yaml", "marquez").spec?.ports?.[0]).toMatchObject({ name: "http", port: 80, targetPort: "http" });
  });
  it("Gitea's gitea-http is headless and leaves targetPort unset", () => {
    const s = svc("gitea.yaml", "gitea-http");
    expect(s.spec?.clusterIP).toBe("None");
    expect(s.spec?.ports).toEqual([{ name: "http", port: 3000 }]);
  });
  it("argocd-server has two ports, http and https, to one targetPort", () => {
    expect(svc("argo-cd.yaml", "argocd-server").spec?.ports?.map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ["http", 80, 8080],
      ["https", 443, 8080],
    ]);
  });
  it("kube-prometheus-stack's node-exporter runs on the host network with containerPort 9100 and no hostPort written", () => {
    const ne = readChartFixture("kube-prometheus-stack.yaml").workloads.find((w) => w.metadata.name === "kube-prometheus-stack-prometheus-node-exporter");
    expect(ne?.kind).toBe("DaemonSet");
    expect(ne?.spec.template.spec.hostNetwork).toBe(true);
    expect(ne?.spec.template.spec.containers.flatMap((c) => c.ports ?? [])).toEqual([{ name: "http-metrics", containerPort: 9100, protocol: "TCP" }]);
  });
});

describe("shapeProblems fails when the contract and the chart no longer match", () => {
  const grafana = serviceEntries.find((e) => e.name === "grafana") as Endpoint & { service: ServiceRef };
  const kps = () => readChartFixture("kube-prometheus-stack.yaml");

  it("a container port renamed under a named targetPort", () => {
    const f = kps();
    const w = f.workloads.find((x) => x.metadata.name === "kube-prometheus-stack-grafana") as Workload;
    for (const c of w.spec.template.spec.containers) for (const p of c.ports ?? []) if (p.name === "grafana") p.name = "web";
    expect(shapeProblems(grafana, f)).toEqual([
      expect.stringContaining(
        `entry 'grafana': Service monitoring/kube-prometheus-stack-grafana: targetPort "grafana" is no container port of kube-prometheus-stack-grafana`,
      ),
    ]);
  });
  it("the Service's port renamed", () => {
    const f = kps();
    const s = f.services.find((x) => x.metadata.name === "kube-prometheus-stack-grafana");
    if (s?.spec?.ports?.[0]) s.spec.ports[0].name = "service";
    expect(shapeProblems(grafana, f)).toEqual([expect.stringContaining("has no port named 'http-web' (ports: service/80)")]);
  });
  it("the Service renamed (another release name)", () => {
    const f = kps();
    for (const s of f.services) s.metadata.name = s.metadata.name.replace("kube-prometheus-stack", "kps");
    expect(shapeProblems(grafana, f)).toEqual([expect.stringContaining("Service monitoring/kube-prometheus-stack-grafana not found")]);
  });
  it("the pod labels no longer selected", () => {
    const f = kps();
    const w = f.workloads.find((x) => x.metadata.name === "kube-prometheus-stack-grafana") as Workload;
    w.spec.template.metadata.labels = { "app.kubernetes.io/name": "grafana" };
    expect(shapeProblems(grafana, f)).toEqual([expect.stringContaining("selects no pod template")]);
  });
  it("a numeric (or unset) targetPort the pods do not declare", () => {
    const gitea = serviceEntries.find((e) => e.name === "gitea") as Endpoint & { service: ServiceRef };
    const f = readChartFixture("gitea.yaml");
    const w = f.workloads.find((x) => x.metadata.name === "gitea") as Workload;
    for (const c of w.spec.template.spec.containers) for (const p of c.ports ?? []) if (p.containerPort === 3000) p.containerPort = 3001;
    expect(shapeProblems(gitea, f)).toEqual([expect.stringContaining("targetPort 3000 is no container port of gitea (ports: ssh 2222, http 3001)")]);
  });
});
