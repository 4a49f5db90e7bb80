// /metrics, written by prom-client from the samples src/core/monitoring.ts computes. A registry per scrape: an entry that leaves the stack's selection leaves
// no series behind, and nothing is global to the process.
import { Gauge, Registry } from "prom-client";
import type { MetricFamily } from "../core/monitoring";

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

export async function renderMetrics(families: readonly MetricFamily[]): Promise<string> {
  const registry = new Registry();
  // A family without samples is left out: an unlabelled prom-client gauge never set would read 0.
  for (const f of families.filter((x) => x.samples.length > 0)) {
    const labelNames = [...new Set(f.samples.flatMap((s) => Object.keys(s.labels)))];
    const gauge = new Gauge({ name: f.name, help: f.help, labelNames, registers: [registry] });
    for (const s of f.samples) gauge.set(s.labels, s.value);
  }
  return registry.metrics();
}
