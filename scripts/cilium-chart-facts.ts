/**
 * Extracts, from Cilium charts, the facts test/cilium.test.ts checks the program against: per
 * chart version, for every values path the L4 mode generates, polices or must leave alone,
 * whether values.schema.json declares it (and with which type), whether values.yaml has it,
 * and its default. Facts, not the upstream text: test/data/cilium-chart-facts.json.
 *
 *   npx tsx scripts/cilium-chart-facts.ts <version>=<chart dir> ...
 *
 * A chart dir holds values.yaml and values.schema.json: an unpacked `helm pull cilium/cilium
 * --version <v>` archive, or install/kubernetes/cilium of the Go module github.com/cilium/cilium.
 * The versions in the file: the published 1.16.19, 1.17.18, 1.18.12, 1.19.6 and 1.20.0 archives
 * (cilium/charts), and 1.20.2 from the Go module the e2e's agent is built from. Versions already
 * in the file and not named again are kept.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { EXIT } from "../src/core/findings";

/** Every values path the program's Cilium values touch or must not touch (src/core/cilium/values.ts). */
export const PATHS = [
  "kubeProxyReplacement",
  "k8sServiceHost",
  "k8sServicePort",
  "k8sServiceHostRef",
  "gatewayAPI.enabled",
  "l2announcements.enabled",
  "enableLBIPAM",
  "defaultLBServiceIPAM",
  "rollOutCiliumPods",
  "operator.rollOutPods",
  "nodePort",
  "nodePort.enabled",
  "nodePort.range",
  "nodePort.bindProtection",
  "nodePort.autoProtectPortRange",
  "nodePort.enableHealthCheck",
  "nodePort.addresses",
  "hostPort",
  "hostPort.enabled",
  "externalIPs",
  "externalIPs.enabled",
  "ingressController.enabled",
  "hubble.ui.ingress.enabled",
  "nodeIPAM.enabled",
  "bgpControlPlane.enabled",
  "l2podAnnouncements.enabled",
  "ipam.mode",
];

export interface PathFacts {
  /** Declared in values.schema.json; its `type` there (a string or a list), when it has one. */
  schema: boolean;
  schemaType?: string | string[];
  /** Present (uncommented) in values.yaml, with this default (null stays null). */
  values: boolean;
  default?: unknown;
}

function schemaNode(schema: unknown, dotted: string): { type?: string | string[] } | undefined {
  let node = schema as { properties?: Record<string, unknown> } | undefined;
  for (const key of dotted.split(".")) {
    node = node?.properties?.[key] as typeof node;
    if (!node) return undefined;
  }
  return node as { type?: string | string[] };
}

export function chartFacts(chartDir: string): Record<string, PathFacts> {
  const schema = JSON.parse(fs.readFileSync(path.join(chartDir, "values.schema.json"), "utf8"));
  const values = parse(fs.readFileSync(path.join(chartDir, "values.yaml"), "utf8")) as Record<string, unknown>;
  const out: Record<string, PathFacts> = {};
  for (const dotted of PATHS) {
    const node = schemaNode(schema, dotted);
    let v: unknown = values;
    let present = true;
    for (const key of dotted.split(".")) {
      if (v === null || typeof v !== "object" || !Object.hasOwn(v, key)) {
        present = false;
        break;
      }
      v = (v as Record<string, unknown>)[key];
    }
    // Mappings are recorded by their leaves (listed separately); only scalars carry a default.
    const scalar = present && (v === null || typeof v !== "object" || Array.isArray(v));
    out[dotted] = {
      schema: node !== undefined,
      ...(node?.type !== undefined ? { schemaType: node.type } : {}),
      values: present,
      ...(scalar ? { default: v } : {}),
    };
  }
  return out;
}

if (require.main === module) {
  const file = path.resolve(__dirname, "../test/data/cilium-chart-facts.json");
  const args = process.argv.slice(2);
  if (args.length === 0 || args.some((a) => !/^\d+\.\d+\.\d+=.+/.test(a))) {
    console.error("usage: npx tsx scripts/cilium-chart-facts.ts <version>=<chart dir> ...");
    process.exit(EXIT.INVALID);
  }
  const previous = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, "utf8")) as { versions: Record<string, unknown> }).versions : {};
  const versions: Record<string, unknown> = { ...previous };
  for (const arg of args) {
    const [version, dir] = [arg.slice(0, arg.indexOf("=")), arg.slice(arg.indexOf("=") + 1)];
    versions[version] = chartFacts(dir);
  }
  const sorted = Object.fromEntries(Object.entries(versions).sort(([a], [b]) => a.localeCompare(b, undefined, { numeric: true })));
  const doc = { generatedBy: "scripts/cilium-chart-facts.ts (do not edit: run it again)", paths: PATHS, versions: sorted };
  fs.writeFileSync(file, `${JSON.stringify(doc, null, 2)}\n`);
  console.log(`${path.relative(process.cwd(), file)}: ${Object.keys(sorted).join(", ")}`);
}
