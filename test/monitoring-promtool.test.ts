// The generated rules and dashboard, checked by the real promtool (built from the Prometheus Go
// module by the toolchain's `prometheus` stage): `check rules` on the PrometheusRule's groups
// and on every dashboard query wrapped as a recording rule, and `test rules` with a unit test
// per alert on recorded series: it fires, it does not fire where it should not, it resolves.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { type AlertRule, alertRules, dashboardQueries, type MonitoringTarget } from "../src/core/monitoring";
import { findPromtool, promtool } from "./support/promtool";

const TARGET: MonitoringTarget = { namespace: "platform-portal", release: "kube-prometheus-stack", stack: "bench" };
const tool = findPromtool();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ui-exposure-promtool-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const rules = alertRules(TARGET);
const byName = Object.fromEntries(rules.flatMap((g) => g.rules).map((r) => [r.alert, r])) as Record<string, AlertRule>;

/** What Prometheus renders from an annotation template, for the few fields ours use. */
function rendered(rule: AlertRule, labels: Record<string, string>, value: string): Record<string, string> {
  const fill = (text: string) => text.replace(/\{\{ \$labels\.(\w+) \}\}/g, (_, k: string) => labels[k] ?? "").replace(/\{\{ \$value \}\}/g, value);
  return Object.fromEntries(Object.entries(rule.annotations).map(([k, v]) => [k, fill(v)]));
}

/** What an alert is about: the portal's job and namespace (plus entry, verdict where it concerns one). */
const portal = { job: "ui-exposure-portal", namespace: "platform-portal" };
/**
 * The labels the Prometheus Operator's scrape job for our ServiceMonitor adds to every series
 * (test/support/prometheus.ts, operatorScrapeConfig), for one portal pod.
 */
const target = (pod: string, ip: string) => ({ ...portal, service: "portal", pod, container: "portal", endpoint: "http", instance: `${ip}:8080` });
const podA = target("ui-exposure-portal-5c8d9b7f6d-x2x9q", "10.244.0.17");
const podB = target("ui-exposure-portal-5c8d9b7f6d-7wlkn", "10.244.0.23");
const seriesOf = (name: string, labels: Record<string, string>) =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .join(",")}}`;
/** The labels the portal gives every series of one stack (the one-stack portal's own, bench's here; up, the scrape's series, has none). */
const bench = { stack: "bench", cluster: "lima-bench" };
const prod = { stack: "prod", cluster: "dirqual" };
const series = (name: string, labels: Record<string, string>) => seriesOf(name, { ...podA, ...(name === "up" ? {} : bench), ...labels });

/** One expected firing alert: the rule's labels, what it is about (never the target's pod or instance; its stack and cluster but for the portal's down), the rendered annotations. */
function firing(alert: string, labels: Record<string, string>, value: string) {
  const rule = byName[alert] as AlertRule;
  const all = { ...rule.labels, ...portal, ...(alert === "UIExposurePortalDown" ? {} : bench), ...labels };
  return { exp_labels: all, exp_annotations: rendered(rule, all, value) };
}

/** A unit test of one alert: input series at a 1m interval, and the alerts expected at which time (rules evaluated every 30 s). */
const unitTest = (name: string, alertname: string, input_series: { series: string; values: string }[], expected: [string, ReturnType<typeof firing>[]][]) => ({
  name,
  interval: "1m",
  input_series,
  alert_rule_test: expected.map(([eval_time, exp_alerts]) => ({ eval_time, alertname, exp_alerts })),
});

const unitTests = [
  unitTest(
    "UIExposureUnreachable: argocd down for 5m fires, gitea up never, resolves once argocd answers",
    "UIExposureUnreachable",
    [
      { series: series("ui_exposure_entry_up", { entry: "argocd" }), values: "1 1 0x10 1x5" },
      { series: series("ui_exposure_entry_up", { entry: "gitea" }), values: "1x18" },
    ],
    [
      ["4m", []],
      ["8m", [firing("UIExposureUnreachable", { entry: "argocd" }, "1")]],
      ["14m", []],
    ],
  ),
  unitTest(
    "UIExposureDrift: grafana drift for 10m fires, gitea absent too, argocd match never; resolves",
    "UIExposureDrift",
    [
      { series: series("ui_exposure_entry_verdict", { entry: "grafana", verdict: "drift" }), values: "0 0 1x15 0x5" },
      { series: series("ui_exposure_entry_verdict", { entry: "grafana", verdict: "match" }), values: "1 1 0x15 1x5" },
      { series: series("ui_exposure_entry_verdict", { entry: "gitea", verdict: "absent" }), values: "1x23" },
      { series: series("ui_exposure_entry_verdict", { entry: "argocd", verdict: "match" }), values: "1x23" },
      { series: series("ui_exposure_entry_verdict", { entry: "argocd", verdict: "drift" }), values: "0x23" },
    ],
    [
      ["6m", []],
      ["13m", [firing("UIExposureDrift", { entry: "gitea", verdict: "absent" }, "1"), firing("UIExposureDrift", { entry: "grafana", verdict: "drift" }, "1")]],
      ["19m", [firing("UIExposureDrift", { entry: "gitea", verdict: "absent" }, "1")]],
    ],
  ),
  // One series of the portal's: quiet, then firing with this value, then resolved.
  ...(
    [
      [
        "UIExposureUndeclared",
        "2 undeclared for 15m fires, 0 does not, resolves",
        "ui_exposure_undeclared_exposures",
        "0 2x20 0x3",
        ["10m", "17m", "23m"],
        "2",
      ],
      ["UIExposurePortalDown", "the target down for 5m fires, up does not, back up resolves", "up", "1 1 0x10 1x5", ["4m", "8m", "14m"], "0"],
    ] as const
  ).map(([alert, what, metric, values, [quiet, fires, resolved], value]) =>
    unitTest(
      `${alert}: ${what}`,
      alert,
      [{ series: series(metric, {}), values }],
      [
        [quiet, []],
        [fires, [firing(alert, {}, value)]],
        [resolved, []],
      ],
    ),
  ),
  unitTest(
    "UIExposureAuditFailing: the audit failing for 15m fires (the undeclared count is then old), succeeding does not, success again resolves",
    "UIExposureAuditFailing",
    [
      { series: series("ui_exposure_audit_success", {}), values: "1 1 0x20 1x3" },
      { series: series("ui_exposure_undeclared_exposures", {}), values: "0x25" },
    ],
    [
      ["10m", []],
      ["18m", [firing("UIExposureAuditFailing", {}, "0")]],
      ["24m", []],
    ],
  ),
  {
    // Every 30 s (the ServiceMonitor's interval): the last read at 5m, then the same timestamp.
    ...unitTest(
      "UIExposureStale: fires as its summary says, once the portal has not read the cluster for more than 10 minutes (not at 9.5), and resolves",
      "UIExposureStale",
      [{ series: series("ui_exposure_last_observation_timestamp_seconds", {}), values: "0+30x10 300x30 1230+30x5" }],
      [
        ["5m", []],
        ["14m30s", []],
        ["15m30s", [firing("UIExposureStale", {}, "630")]],
        ["21m", []],
      ],
    ),
    interval: "30s",
  },
  // A portal rollout (the pod, hence the instance, changes) and one failed scrape (its series
  // marked stale, `up` 0): what the alert is about has not changed, so it stays firing.
  unitTest(
    "UIExposureUnreachable: argocd down through a portal rollout and a failed scrape stays one firing alert, then resolves",
    "UIExposureUnreachable",
    [
      { series: seriesOf("ui_exposure_entry_up", { ...podA, ...bench, entry: "argocd" }), values: "0x6 stale" },
      { series: seriesOf("ui_exposure_entry_up", { ...podB, ...bench, entry: "argocd" }), values: "_x7 0 stale 0x6 1x3" },
      { series: seriesOf("up", podA), values: "1x6 stale" },
      { series: seriesOf("up", podB), values: "_x7 1 0 1x9" },
    ],
    [
      ["4m", []],
      ["6m", [firing("UIExposureUnreachable", { entry: "argocd" }, "0")]],
      ["7m", [firing("UIExposureUnreachable", { entry: "argocd" }, "0")]],
      ["8m", [firing("UIExposureUnreachable", { entry: "argocd" }, "0")]],
      ["9m", [firing("UIExposureUnreachable", { entry: "argocd" }, "0")]],
      ["12m", [firing("UIExposureUnreachable", { entry: "argocd" }, "0")]],
      ["16m", []],
    ],
  ),
  unitTest(
    "UIExposureDrift: grafana drifting through a portal rollout stays one firing alert",
    "UIExposureDrift",
    [
      { series: seriesOf("ui_exposure_entry_verdict", { ...podA, ...bench, entry: "grafana", verdict: "drift" }), values: "1x10 stale" },
      { series: seriesOf("ui_exposure_entry_verdict", { ...podB, ...bench, entry: "grafana", verdict: "drift" }), values: "_x11 1x10" },
    ],
    [
      ["10m", [firing("UIExposureDrift", { entry: "grafana", verdict: "drift" }, "1")]],
      ["12m", [firing("UIExposureDrift", { entry: "grafana", verdict: "drift" }, "1")]],
      ["16m", [firing("UIExposureDrift", { entry: "grafana", verdict: "drift" }, "1")]],
    ],
  ),
  unitTest(
    "UIExposurePortalDown: a portal that cannot be scraped, rolled out to a pod that cannot be scraped either, stays one firing alert",
    "UIExposurePortalDown",
    [
      { series: seriesOf("up", podA), values: "0x6 stale" },
      { series: seriesOf("up", podB), values: "_x8 0x10" },
    ],
    [
      ["6m", [firing("UIExposurePortalDown", {}, "0")]],
      ["7m", [firing("UIExposurePortalDown", {}, "1")]],
      ["12m", [firing("UIExposurePortalDown", {}, "0")]],
    ],
  ),
  unitTest(
    "UIExposurePortalDown: no target at all (the ServiceMonitor selects nothing) fires too, and resolves once scraped",
    "UIExposurePortalDown",
    [
      { series: series("up", {}), values: "_x7 1x5" },
      // Another portal's target does not count.
      { series: seriesOf("up", { ...podB, namespace: "other" }), values: "1x12" },
    ],
    [
      ["3m", []],
      ["6m", [firing("UIExposurePortalDown", {}, "1")]],
      ["10m", []],
    ],
  ),
  // Prometheus has just started (the sandbox's, scraping only the portal): its rules are evaluated
  // before its first scrape. No alert may go pending then: the ALERTS series records pending
  // ones (alert_rule_test sees only firing ones), none at any evaluation of the first 2 minutes.
  {
    ...unitTest(
      "UIExposurePortalDown: nothing pending before Prometheus's first scrape (at 30 s)",
      "UIExposurePortalDown",
      [{ series: series("up", {}), values: "_ 1x10" }],
      [
        ["0s", []],
        ["30s", []],
      ],
    ),
    interval: "30s",
    promql_expr_test: [{ expr: 'count_over_time(ALERTS{alertname="UIExposurePortalDown"}[5m])', eval_time: "2m", exp_samples: [] }],
  },
  // The guard against that start does not hide a portal that is never scraped: Prometheus
  // scrapes itself from the start, the portal has no target; it fires 5 minutes after
  // Prometheus's first minute.
  {
    ...unitTest(
      "UIExposurePortalDown: a portal never scraped since Prometheus started fires, 5 minutes after its first minute",
      "UIExposurePortalDown",
      [{ series: seriesOf("up", { job: "prometheus", instance: "127.0.0.1:9090" }), values: "1x20" }],
      [
        ["5m30s", []],
        ["6m", [firing("UIExposurePortalDown", {}, "1")]],
      ],
    ),
    interval: "30s",
  },
  // One portal serving two stacks (or two portals' series in one Prometheus): both publish argocd, only prod's fails; only
  // prod's alert fires, labelled with its stack and cluster, its annotations naming it.
  unitTest(
    "UIExposureUnreachable per stack: prod's argocd down fires for prod alone, bench's argocd up",
    "UIExposureUnreachable",
    [
      { series: series("ui_exposure_entry_up", { entry: "argocd" }), values: "1x14" },
      { series: series("ui_exposure_entry_up", { ...prod, entry: "argocd" }), values: "1 1 0x10 1x2" },
    ],
    [
      ["4m", []],
      ["8m", [firing("UIExposureUnreachable", { ...prod, entry: "argocd" }, "0")]],
      ["14m", []],
    ],
  ),
  unitTest(
    "UIExposureDrift per stack: prod's argocd absent fires for prod alone, bench's argocd match",
    "UIExposureDrift",
    [
      { series: series("ui_exposure_entry_verdict", { entry: "argocd", verdict: "absent" }), values: "0x14" },
      { series: series("ui_exposure_entry_verdict", { ...prod, entry: "argocd", verdict: "absent" }), values: "1x14" },
    ],
    [
      ["6m", []],
      ["12m", [firing("UIExposureDrift", { ...prod, entry: "argocd", verdict: "absent" }, "1")]],
    ],
  ),
  // The stack-wide alerts: the same series for both stacks, prod's bad, bench's good.
  ...(
    [
      ["UIExposureUndeclared", "ui_exposure_undeclared_exposures", "0x20", "3x20", "17m", "3"],
      ["UIExposureAuditFailing", "ui_exposure_audit_success", "1x20", "0x20", "17m", "0"],
    ] as const
  ).map(([alert, metric, good, bad, fires, value]) =>
    unitTest(
      `${alert} per stack: prod's fires for prod alone, bench's is fine`,
      alert,
      [
        { series: series(metric, {}), values: good },
        { series: series(metric, prod), values: bad },
      ],
      [
        ["10m", []],
        [fires, [firing(alert, prod, value)]],
      ],
    ),
  ),
  // prod's cluster stops answering (its portal keeps serving its last read's timestamp), bench's is read every 30 s.
  {
    ...unitTest(
      "UIExposureStale per stack: prod's cluster not read for 10 minutes fires for prod alone, bench's fresh",
      "UIExposureStale",
      [
        { series: series("ui_exposure_last_observation_timestamp_seconds", {}), values: "0+30x40" },
        { series: series("ui_exposure_last_observation_timestamp_seconds", prod), values: "0+30x10 300x30" },
      ],
      [
        ["14m30s", []],
        ["15m30s", [firing("UIExposureStale", prod, "630")]],
      ],
    ),
    interval: "30s",
  },
];

describe.skipIf("missing" in tool)(`promtool on the generated rules${"missing" in tool ? ` (skipped: ${tool.missing})` : ""}`, () => {
  const bin = (tool as { bin: string }).bin;

  it("check rules: the PrometheusRule's groups, exactly as the component creates them", () => {
    const file = path.join(dir, "rules.yaml");
    fs.writeFileSync(file, stringify({ groups: rules }));
    const r = promtool(bin, ["check", "rules", file]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${Object.keys(byName).length} rules found`);
    expect(Object.keys(byName)).toHaveLength(6);
  });

  it("check rules: every dashboard query, wrapped as a recording rule", () => {
    const file = path.join(dir, "dashboard.yaml");
    const queries = dashboardQueries(TARGET);
    fs.writeFileSync(
      file,
      stringify({ groups: [{ name: "dashboard", rules: queries.map((q, i) => ({ record: `ui_exposure:dashboard_query_${i}`, expr: q.expr })) }] }),
    );
    const r = promtool(bin, ["check", "rules", file]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${queries.length} rules found`);
  });

  it("check rules finds a broken expression (the check is not a no-op)", () => {
    const file = path.join(dir, "broken.yaml");
    fs.writeFileSync(file, stringify({ groups: [{ name: "x", rules: [{ alert: "X", expr: "ui_exposure_entry_up{entry=~}" }] }] }));
    expect(promtool(bin, ["check", "rules", file]).code).not.toBe(0);
  });

  it("test rules: each alert fires, does not fire, and resolves on recorded series", () => {
    fs.writeFileSync(path.join(dir, "rules.yaml"), stringify({ groups: rules }));
    fs.writeFileSync(path.join(dir, "tests.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: "30s", tests: unitTests }));
    const r = promtool(bin, ["test", "rules", "tests.yaml"], undefined, dir);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain("SUCCESS");
    // Every alert is covered.
    const covered = new Set(unitTests.flatMap((t) => t.alert_rule_test.map((a) => a.alertname)));
    expect([...covered].sort()).toEqual(Object.keys(byName).sort());
  });

  it("test rules fails when an expectation is wrong (the test is not a no-op)", () => {
    const wrong = [
      {
        ...unitTests[0],
        alert_rule_test: [{ eval_time: "4m", alertname: "UIExposureUnreachable", exp_alerts: [firing("UIExposureUnreachable", { entry: "argocd" }, "1")] }],
      },
    ];
    fs.writeFileSync(path.join(dir, "wrong.yaml"), stringify({ rule_files: ["rules.yaml"], evaluation_interval: "30s", tests: wrong }));
    expect(promtool(bin, ["test", "rules", "wrong.yaml"], undefined, dir).code).not.toBe(0);
  });
});
