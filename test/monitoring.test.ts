// src/core/monitoring.ts and components/monitoring.ts: the settings, the objects a stack with
// monitoring enabled creates (under Pulumi's mocks), what the preview says without the
// Prometheus Operator's CRDs, and that the ServiceMonitor selects exactly the portal's Service.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { type RegisteredResource, useProgramMocks } from "../components/mocks";
import { declareStack } from "../components/program";
import { SnapshotReader } from "../src/core/kube/cluster";
import {
  alertRules,
  dashboard,
  dashboardQueries,
  METRICS,
  metricFamilies,
  monitoringApiProblem,
  monitoringObjects,
  serviceMonitorSpec,
} from "../src/core/monitoring";
import { PORTAL_PORT_NAME, portalService } from "../src/core/portal/spec";
import { argocdServer } from "./support/command-helpers";
import { ciliumConfig, parseSettings } from "./support/fixtures";
import { readyNode } from "./support/portal-fixtures";

const projectDir = path.resolve(__dirname, "..");
const CONTRACT = path.join(projectDir, "contract", "endpoints.example.yaml");
const TARGET = { namespace: "platform-portal", release: "kube-prometheus-stack", stack: "bench" };

const config = (monitoring: Record<string, unknown> | undefined, portal: Record<string, unknown> = { enabled: true }): Record<string, string> => ({
  "kubernetes:context": "test",
  "ui-exposure:contract": CONTRACT,
  "ui-exposure:entries": JSON.stringify(["argocd", "portal"]),
  "ui-exposure:cilium": JSON.stringify({ mode: "cohabit" }),
  "ui-exposure:portal": JSON.stringify(portal),
  "ui-exposure:allowlist": JSON.stringify({ services: ["kube-system/hubble-*"], hostPorts: [] }),
  ...(monitoring ? { "ui-exposure:monitoring": JSON.stringify(monitoring) } : {}),
});

/** What API discovery of monitoring.coreos.com/v1 answers once kube-prometheus-stack's CRDs are installed. */
const operatorApi = (resources = ["alertmanagers", "podmonitors", "probes", "prometheuses", "prometheusrules", "servicemonitors", "thanosrulers"]) => ({
  kind: "APIResourceList",
  apiVersion: "v1",
  groupVersion: "monitoring.coreos.com/v1",
  resources: resources.map((name) => ({ name, namespaced: true })),
});
const cluster = (extra: unknown[] = []) =>
  new SnapshotReader([readyNode("bench", "127.0.0.2"), argocdServer, ciliumConfig({ "kube-proxy-replacement": "true" }), ...extra]);

describe("monitoring settings", () => {
  it("is off by default; release defaults to kube-prometheus-stack", () => {
    expect(parseSettings(config(undefined), "Pulumi.test.yaml").monitoring).toEqual({ enabled: false, release: "kube-prometheus-stack" });
    expect(parseSettings(config({ enabled: true, release: "kps" }), "Pulumi.test.yaml").monitoring).toEqual({ enabled: true, release: "kps" });
  });

  it("refuses monitoring without the in-cluster portal, a release that is not a label value, and unknown keys", () => {
    expect(() => parseSettings(config({ enabled: true }, { enabled: false }), "Pulumi.test.yaml")).toThrow(
      "ui-exposure:monitoring.enabled: needs ui-exposure:portal.enabled: true (Prometheus scrapes the in-cluster portal's /metrics)",
    );
    expect(() => parseSettings(config({ enabled: true, release: "my release" }), "Pulumi.test.yaml")).toThrow(
      "ui-exposure:monitoring.release: must be a label value (the Helm release name, e.g. kube-prometheus-stack)",
    );
    expect(() => parseSettings(config({ enabled: true, relase: "x" }), "Pulumi.test.yaml")).toThrow("ui-exposure:monitoring: unknown key 'relase'");
  });
});

describe("monitoring against kube-prometheus-stack 88.5.3 (test/data/charts, rendered with helm's default values)", () => {
  const chart = parse(fs.readFileSync(path.join(projectDir, "test/data/charts/kube-prometheus-stack.yaml"), "utf8")) as {
    items: {
      kind: string;
      metadata: { name: string; labels?: Record<string, string> };
      spec?: { template?: { spec?: { containers?: { name: string }[] } } };
    }[];
  };
  it("the default release is the label the chart's own objects carry (its Prometheus selects by it), and its Grafana runs the dashboard sidecar", () => {
    const defaults = parseSettings(config({ enabled: true }), "Pulumi.test.yaml").monitoring;
    const prometheus = chart.items.find((o) => o.kind === "Service" && o.metadata.name === "kube-prometheus-stack-prometheus");
    expect(prometheus?.metadata.labels?.release).toBe(defaults.release);
    const grafana = chart.items.find((o) => o.kind === "Deployment" && o.metadata.name === "kube-prometheus-stack-grafana");
    expect(grafana?.spec?.template?.spec?.containers?.map((c) => c.name)).toContain("grafana-sc-dashboard");
  });
});

describe("monitoring objects (pure)", () => {
  it("the ServiceMonitor selects the portal's ClusterIP Service (its labels, its port name) in its namespace, and nothing else we create", () => {
    const spec = serviceMonitorSpec(TARGET);
    const svc = portalService("platform-portal");
    for (const [k, v] of Object.entries(spec.selector.matchLabels)) expect(svc.metadata.labels?.[k]).toBe(v);
    expect(spec.namespaceSelector).toEqual({ matchNames: ["platform-portal"] });
    expect(spec.endpoints).toEqual([{ port: PORTAL_PORT_NAME, path: "/metrics", interval: "30s", scrapeTimeout: "10s" }]);
    expect(svc.spec?.ports?.map((p) => p.name)).toEqual([PORTAL_PORT_NAME]);
    // Our NodePort Services carry other labels: the portal is scraped once, not once per Service.
    expect(spec.selector.matchLabels).not.toHaveProperty("ui-exposure.io/entry");
    expect(spec.jobLabel).toBe("app.kubernetes.io/name");
  });

  it("six alerts with their for, each naming the command that explains it; entry-level ones keep the entry label", () => {
    const rules = alertRules(TARGET).flatMap((g) => g.rules);
    expect(rules.map((r) => [r.alert, r.for])).toEqual([
      ["UIExposureUnreachable", "5m"],
      ["UIExposureDrift", "10m"],
      ["UIExposureUndeclared", "15m"],
      ["UIExposureAuditFailing", "15m"],
      ["UIExposureStale", "9m"],
      ["UIExposurePortalDown", "5m"],
    ]);
    const byName = Object.fromEntries(rules.map((r) => [r.alert, r]));
    // The stack is the series' own (a portal over several stacks serves each one's): the command names it.
    expect(byName.UIExposureUnreachable?.annotations.description).toContain("`exposure status --stack {{ $labels.stack }} --entry {{ $labels.entry }}`");
    expect(byName.UIExposureUnreachable?.annotations.description).toContain("`exposure probe --stack {{ $labels.stack }} --entry {{ $labels.entry }}`");
    expect(byName.UIExposureDrift?.annotations.description).toContain("`exposure status --stack {{ $labels.stack }} --entry {{ $labels.entry }}`");
    expect(byName.UIExposureUndeclared?.annotations.description).toContain("`exposure drift --stack {{ $labels.stack }}`");
    expect(byName.UIExposureAuditFailing?.annotations.description).toContain("`exposure drift --stack {{ $labels.stack }}`");
    // The scrape target's labels (pod, instance...) aggregated away; a gap bridged by the last value.
    expect(byName.UIExposureUnreachable?.expr).toBe(
      'max by (namespace, job, stack, cluster, entry) (last_over_time(ui_exposure_entry_up{job="ui-exposure-portal",namespace="platform-portal"}[2m])) == 0',
    );
    for (const r of rules) expect(r.labels).toEqual({ severity: "warning" });
  });

  it("every alert but UIExposurePortalDown is per stack: it keeps stack and cluster, and its summary names the stack; the portal's down alert names this stack", () => {
    const rules = alertRules(TARGET).flatMap((g) => g.rules);
    for (const r of rules.filter((x) => x.alert !== "UIExposurePortalDown")) {
      expect(r.expr, r.alert).toMatch(/^(time\(\) - )?max by \(namespace, job, stack, cluster[,)]/);
      expect(r.annotations.summary, r.alert).toContain("{{ $labels.stack }}");
      expect(r.annotations.description, r.alert).toContain("--stack {{ $labels.stack }}");
      expect(r.annotations.description, r.alert).not.toContain("--stack bench");
    }
    // `up` is the scrape's own series: no stack, the portal (every stack it serves) is down.
    const down = rules.find((r) => r.alert === "UIExposurePortalDown");
    expect(down?.expr).not.toContain("stack");
    expect(down?.annotations.description).toContain("`exposure status --stack bench`");
  });

  it("the dashboard: the undeclared count, then one row per entry (up, verdict, latency, port), every query from dashboardQueries", () => {
    const d = dashboard(TARGET) as { panels: { type: string; title: string; repeat?: string; targets?: { expr: string }[] }[] };
    expect(d.panels.map((p) => [p.type, p.title])).toEqual([
      ["stat", "Undeclared exposures"],
      ["stat", "Observation age"],
      ["row", "$entry"],
      ["stat", "Up"],
      ["stat", "Verdict"],
      ["stat", "Probe latency"],
      ["stat", "Port"],
    ]);
    expect(d.panels.find((p) => p.type === "row")?.repeat).toBe("entry");
    const queries = new Set(dashboardQueries(TARGET).map((q) => q.expr));
    for (const p of d.panels) for (const t of p.targets ?? []) expect(queries.has(t.expr)).toBe(true);
  });

  it("the dashboard filters by a stack variable (all by default, the no-stack portal's series too) and every panel shows one value per stack", () => {
    const d = dashboard(TARGET) as {
      templating: { list: { name: string; query?: { query: string }; includeAll?: boolean; multi?: boolean; allValue?: string }[] };
      panels: { targets?: { expr: string; legendFormat: string }[] }[];
    };
    const stack = d.templating.list.find((v) => v.name === "stack");
    expect(stack).toMatchObject({
      query: { query: 'label_values(ui_exposure_build_info{job="ui-exposure-portal",namespace="platform-portal"}, stack)' },
      includeAll: true,
      multi: true,
      allValue: ".*",
    });
    // The entries offered are those of the stacks chosen.
    expect(d.templating.list.find((v) => v.name === "entry")?.query?.query).toBe(
      'label_values(ui_exposure_entry_verdict{job="ui-exposure-portal",namespace="platform-portal",stack=~"$stack"}, entry)',
    );
    // The variables come before the ones that use them (Grafana resolves them in order).
    expect(d.templating.list.map((v) => v.name)).toEqual(["datasource", "stack", "entry"]);
    for (const q of dashboardQueries(TARGET)) {
      expect(q.expr, q.title).toContain('stack=~"$stack"');
      expect(q.expr, q.title).toMatch(/max by \(stack, cluster[,)]/);
    }
    const targets = d.panels.flatMap((p) => p.targets ?? []);
    expect(targets).toHaveLength(dashboardQueries(TARGET).length);
    for (const t of targets) expect(t.legendFormat).toMatch(/^\{\{stack\}\} \(\{\{cluster\}\}\)/);
    expect(dashboardQueries(TARGET).find((q) => q.title === "Up")?.expr).toBe(
      'max by (stack, cluster) (ui_exposure_entry_up{job="ui-exposure-portal",namespace="platform-portal",stack=~"$stack",entry=~"$entry"})',
    );
  });

  it("the dashboard's uid is valid by Grafana's rule and one per stack: kept as ui-exposure-<stack> where that is valid, else hashed", () => {
    const uid = (stack: string) => (dashboard({ ...TARGET, stack }) as { uid: string }).uid;
    expect(uid("bench")).toBe("ui-exposure-bench");
    expect(uid("dirqual")).toBe("ui-exposure-dirqual");
    const stacks = [
      "prod.eu",
      "prod_eu",
      "prod-eu",
      "team-platform-production-eu-west-1",
      "team-platform-production-eu-west-2",
      "a".repeat(28),
      "a".repeat(29),
      "é",
    ];
    const uids = stacks.map(uid);
    for (const [i, u] of uids.entries()) expect(u, stacks[i]).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
    expect(new Set(uids).size).toBe(stacks.length);
    expect(uid("prod.eu")).toMatch(/^ui-exposure-prod_eu-[0-9a-f]{8}$/);
    expect(uid("a".repeat(28))).toBe(`ui-exposure-${"a".repeat(28)}`);
    // Stable: the same stack always gets the same dashboard.
    expect(uid("team-platform-production-eu-west-1")).toBe(uid("team-platform-production-eu-west-1"));
  });

  it('every object carries release: <release>; the dashboard ConfigMap the sidecar\'s grafana_dashboard: "1"', () => {
    const o = monitoringObjects(TARGET);
    for (const obj of [o.serviceMonitor, o.prometheusRule, o.dashboard]) expect(obj.metadata.labels.release).toBe("kube-prometheus-stack");
    expect(o.dashboard.metadata.labels.grafana_dashboard).toBe("1");
    expect(JSON.parse(o.dashboard.data["ui-exposure.json"] as string)).toEqual(dashboard(TARGET));
  });

  it("without the operator's CRDs: one line naming what is missing and what to do; undefined where the source cannot tell", () => {
    expect(monitoringApiProblem([], "context bench")).toBe(
      "ui-exposure:monitoring: context bench does not serve servicemonitors and prometheusrules in monitoring.coreos.com/v1 (the Prometheus Operator's CRDs, installed by kube-prometheus-stack): install kube-prometheus-stack first, or set ui-exposure:monitoring.enabled to false",
    );
    expect(monitoringApiProblem(["servicemonitors", "prometheusrules"], "x")).toBeUndefined();
    expect(monitoringApiProblem(undefined, "x")).toBeUndefined();
  });

  it("metric families: no series for entries not published; every name is one of METRICS", () => {
    const names = metricFamilies([{ view: undefined, observedAt: undefined, audit: { undeclared: 2 }, version: "1", stack: "s", cluster: "c" }]).map(
      (f) => f.name,
    );
    expect(names.every((n) => Object.values(METRICS).includes(n as never))).toBe(true);
    expect(names).toContain(METRICS.undeclared);
  });

  it("metric families of several stacks: one family per name, every sample labelled with its stack and cluster", () => {
    const input = (stack: string, cluster: string, undeclared: number) => ({ audit: { undeclared, ok: true }, version: "1", stack, cluster });
    const families = metricFamilies([input("bench", "lima-bench", 2), input("prod", "dirqual", 0)]);
    expect(families.map((f) => f.name)).toEqual([...new Set(families.map((f) => f.name))]);
    for (const f of families) for (const s of f.samples) expect(Object.keys(s.labels), f.name).toEqual(expect.arrayContaining(["stack", "cluster"]));
    expect(families.find((f) => f.name === METRICS.undeclared)?.samples).toEqual([
      { labels: { stack: "bench", cluster: "lima-bench" }, value: 2 },
      { labels: { stack: "prod", cluster: "dirqual" }, value: 0 },
    ]);
    expect(families.find((f) => f.name === METRICS.buildInfo)?.samples[1]).toEqual({ labels: { version: "1", stack: "prod", cluster: "dirqual" }, value: 1 });
  });
});

describe("program with monitoring enabled (mocks)", () => {
  let registered: RegisteredResource[] = [];
  beforeEach(async () => {
    registered = (await useProgramMocks({ stack: "test" })).resources;
  });
  afterEach(() => pulumi.runtime.disconnect());

  it("creates a ServiceMonitor, a PrometheusRule and a dashboard ConfigMap in the portal's namespace, through the stack's provider, as children of one component", async () => {
    await declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: cluster([operatorApi()]) });
    await pulumi.runtime.disconnect();
    const component = registered.filter((r) => r.type === "ui-exposure:monitoring:Monitoring");
    expect(component.map((r) => r.name)).toEqual(["monitoring"]);
    const sm = registered.find((r) => r.type === "kubernetes:monitoring.coreos.com/v1:ServiceMonitor");
    const rule = registered.find((r) => r.type === "kubernetes:monitoring.coreos.com/v1:PrometheusRule");
    const cm = registered.find((r) => r.name === "monitoring-dashboard");
    const expected = monitoringObjects({ ...TARGET, stack: "test" });
    expect(sm?.inputs).toMatchObject({
      metadata: { namespace: "platform-portal", labels: { release: "kube-prometheus-stack" } },
      spec: expected.serviceMonitor.spec,
    });
    expect(rule?.inputs).toMatchObject({ spec: expected.prometheusRule.spec });
    expect(cm?.inputs).toMatchObject({ metadata: { labels: { grafana_dashboard: "1", release: "kube-prometheus-stack" } } });
    for (const r of [sm, rule, cm]) expect(r?.provider).toBe("kubernetes");
    // The portal audits for /metrics: it gets the allowlist's patterns and may list Pods.
    const deployment = registered.find((r) => r.type === "kubernetes:apps/v1:Deployment");
    type DeploymentInputs = { spec: { template: { spec: { containers: { env: { name: string; value: string }[] }[] } } } };
    const env = (deployment?.inputs as DeploymentInputs | undefined)?.spec.template.spec.containers[0]?.env;
    expect(env?.find((e) => e.name === "PORTAL_ALLOWLIST")?.value).toBe('{"services":["kube-system/hubble-*"],"hostPorts":[]}');
    const role = registered.find((r) => r.type === "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole");
    expect((role?.inputs as { rules: { resources: string[] }[] } | undefined)?.rules[0]?.resources).toEqual(["services", "nodes", "pods"]);
  });

  it("off (the default): no monitoring object, no allowlist in the portal, no Pods in its role", async () => {
    await declareStack({ projectDir, stack: "test", config: config(undefined), cluster: cluster() });
    await pulumi.runtime.disconnect();
    expect(registered.filter((r) => r.type.includes("monitoring"))).toEqual([]);
    const deployment = registered.find((r) => r.type === "kubernetes:apps/v1:Deployment");
    expect(JSON.stringify(deployment?.inputs)).not.toContain("PORTAL_ALLOWLIST");
  });

  it("enabled on a cluster without the Prometheus Operator's CRDs: one line, nothing declared", async () => {
    await expect(
      declareStack({ projectDir, stack: "test", config: config({ enabled: true }), cluster: cluster([operatorApi(["alertmanagers"])]) }),
    ).rejects.toThrow(
      "stack test cannot be deployed (nothing was changed): ui-exposure:monitoring: snapshot does not serve servicemonitors and prometheusrules in monitoring.coreos.com/v1 (the Prometheus Operator's CRDs, installed by kube-prometheus-stack): install kube-prometheus-stack first, or set ui-exposure:monitoring.enabled to false",
    );
    expect(registered).toEqual([]);
  });
});

describe("exposure render with monitoring enabled", () => {
  it("shows the ServiceMonitor, the PrometheusRule and the dashboard ConfigMap with the portal", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "render-monitoring-"));
    try {
      fs.copyFileSync(path.join(projectDir, "Pulumi.yaml"), path.join(dir, "Pulumi.yaml"));
      fs.mkdirSync(path.join(dir, "contract"));
      fs.copyFileSync(CONTRACT, path.join(dir, "contract", "endpoints.yaml"));
      fs.writeFileSync(
        path.join(dir, "Pulumi.mon.yaml"),
        stringify({
          config: {
            "kubernetes:context": "bench",
            "ui-exposure:entries": ["argocd", "portal"],
            "ui-exposure:cilium": { mode: "cohabit" },
            "ui-exposure:portal": { enabled: true },
            "ui-exposure:monitoring": { enabled: true, release: "kube-prometheus-stack" },
          },
        }),
      );
      const r = spawnSync(
        process.execPath,
        [path.join(projectDir, "bin/exposure.cjs"), "render", "--stack", "mon", "--cluster", path.join(projectDir, "examples/bench-cluster.yaml"), "--json"],
        {
          cwd: dir,
          encoding: "utf8",
          timeout: 120_000,
        },
      );
      expect(r.stderr).toBe("");
      expect(r.status).toBe(0);
      const out = JSON.parse(r.stdout) as { objects: { kind: string; metadata: { namespace?: string; labels?: Record<string, string> } }[] };
      const kinds = out.objects.map((o) => o.kind);
      expect(kinds).toEqual(expect.arrayContaining(["ServiceMonitor", "PrometheusRule", "ConfigMap", "Deployment"]));
      const sm = out.objects.find((o) => o.kind === "ServiceMonitor");
      expect(sm?.metadata).toMatchObject({ namespace: "platform-portal", labels: { release: "kube-prometheus-stack" } });
      expect(out.objects.some((o) => o.kind === "ConfigMap" && o.metadata.labels?.grafana_dashboard === "1")).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
