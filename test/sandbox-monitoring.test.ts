// src/adapters/sandbox/monitoring.ts: what `sandbox up --monitoring` gives Prometheus (the stack's
// own alert rules, the scrape of the portal labelled as the in-cluster one), the setting that
// shortens every `for`, the record of Prometheus's address; the real promtool checks the files.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import {
  ALERT_FOR_VARIABLE,
  alertForSeconds,
  prometheusArgs,
  prometheusListening,
  SANDBOX_PORTAL_TARGET_LABELS,
  writePrometheusFiles,
} from "../src/adapters/sandbox/monitoring";
import { readSandboxState } from "../src/adapters/sandbox/processes";
import { announcedIn } from "../src/adapters/sandbox/sandbox";
import { alertRules, portalSelector } from "../src/core/monitoring";
import { DEFAULT_PORTAL_NAMESPACE } from "../src/core/settings";
import { findPromtool, promtool } from "./support/promtool";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-monitoring-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const shipped = alertRules({ namespace: DEFAULT_PORTAL_NAMESPACE, release: "kube-prometheus-stack", stack: "sandbox" });

describe("sandbox monitoring", () => {
  it("loads the stack's alert rules as shipped, and scrapes the portal every 30 s with the labels the rules select", () => {
    const files = writePrometheusFiles(path.join(dir, "shipped"), new URL("http://127.0.0.1:41234/"), "sandbox", undefined);
    expect(parse(fs.readFileSync(files.rules, "utf8"))).toEqual({ groups: shipped });
    const config = parse(fs.readFileSync(files.config, "utf8"));
    expect(config.global).toEqual({ scrape_interval: "30s", evaluation_interval: "30s", scrape_timeout: "10s" });
    expect(config.rule_files).toEqual([files.rules]);
    expect(config.scrape_configs).toEqual([
      { job_name: "ui-exposure-portal", metrics_path: "/metrics", static_configs: [{ targets: ["127.0.0.1:41234"], labels: SANDBOX_PORTAL_TARGET_LABELS }] },
    ]);
    // The series carry what every rule selects: job (the job name) and the portal's namespace.
    expect(portalSelector({ namespace: SANDBOX_PORTAL_TARGET_LABELS.namespace })).toBe('job="ui-exposure-portal",namespace="platform-portal"');
    expect(fs.statSync(files.config).mode & 0o777).toBe(0o600);
    // Port 0: Prometheus binds a port of its own and says which (no port picked before it starts, for another process to take).
    expect(prometheusArgs(files, "/x")).toEqual([
      `--config.file=${files.config}`,
      "--storage.tsdb.path=/x/data",
      "--storage.tsdb.retention.time=1d",
      "--web.listen-address=127.0.0.1:0",
    ]);
  });

  it("reads the port Prometheus announces in its log (the line Prometheus 3 writes once it listens), nothing else", () => {
    const log = path.join(dir, "prometheus.log");
    fs.writeFileSync(
      log,
      [
        'time=2026-12-02T10:47:41.045Z level=INFO source=web.go:731 msg="Start listening for connections" component=web address=127.0.0.1:0',
        'time=2026-12-02T10:47:41.047Z level=INFO source=tls_config.go:395 msg="Listening on" component=web address=127.0.0.1:40815',
        "",
      ].join("\n"),
    );
    expect(announcedIn(log, 0, prometheusListening)).toBe("http://127.0.0.1:40815/");
    // An older run's line before `from` is not this run's; nor is an address elsewhere, or port 0.
    expect(announcedIn(log, fs.statSync(log).size, prometheusListening)).toBeUndefined();
    expect(prometheusListening('msg="Listening on" component=web address=0.0.0.0:9090')).toBeUndefined();
    expect(prometheusListening('msg="Listening on" component=web address=127.0.0.1:0')).toBeUndefined();
  });

  it(`${ALERT_FOR_VARIABLE}=N changes every for to N s and the intervals to 5 s, nothing else of the rules`, () => {
    const files = writePrometheusFiles(path.join(dir, "short"), new URL("http://127.0.0.1:41234/"), "sandbox", 20);
    const { groups } = parse(fs.readFileSync(files.rules, "utf8")) as { groups: typeof shipped };
    expect(groups).toEqual(shipped.map((g) => ({ ...g, rules: g.rules.map((r) => ({ ...r, for: "20s" })) })));
    expect(parse(fs.readFileSync(files.config, "utf8")).global).toEqual({ scrape_interval: "5s", evaluation_interval: "5s", scrape_timeout: "4s" });
  });

  it(`${ALERT_FOR_VARIABLE}: whole seconds from 1 to 3600, else one line (exit 2)`, () => {
    expect(alertForSeconds({})).toBeUndefined();
    expect(alertForSeconds({ [ALERT_FOR_VARIABLE]: "" })).toBeUndefined();
    expect(alertForSeconds({ [ALERT_FOR_VARIABLE]: "20" })).toBe(20);
    for (const bad of ["0", "3601", "5m", "-1", "1e3", " 20", "99999"]) {
      expect(() => alertForSeconds({ [ALERT_FOR_VARIABLE]: bad }), bad).toThrow(
        `${ALERT_FOR_VARIABLE} must be a whole number of seconds between 1 and 3600, not '${bad}'`,
      );
    }
  });

  it("the record's Prometheus address is acted on only when it is a loopback http://HOST:PORT/", () => {
    const write = (prometheus: unknown) => {
      const file = path.join(dir, "sandbox.json");
      fs.writeFileSync(file, JSON.stringify({ processes: [], prometheus }));
      return readSandboxState(file);
    };
    expect(write("http://127.0.0.1:9090/")).toMatchObject({ prometheus: "http://127.0.0.1:9090/", rejected: [] });
    for (const bad of ["http://192.0.2.1:9090/", "http://127.0.0.1:9090/api", "file:///etc/passwd", 42]) {
      expect(write(bad), String(bad)).toMatchObject({ prometheus: "", rejected: ["prometheus: not a loopback http://HOST:PORT/ address"] });
    }
  });

  const tool = findPromtool();
  it.skipIf("missing" in tool)(`promtool check config accepts the configuration and its rules${"missing" in tool ? ` (skipped: ${tool.missing})` : ""}`, () => {
    const files = writePrometheusFiles(path.join(dir, "checked"), new URL("http://127.0.0.1:41234/"), "sandbox", 20);
    const r = promtool((tool as { bin: string }).bin, ["check", "config", files.config]);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(`${r.stdout}${r.stderr}`).toContain(`SUCCESS: ${shipped[0]?.rules.length} rules found`);
  });
});
