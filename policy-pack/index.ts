// ui-exposure's CrossGuard policy pack (docs/policy-pack.md): every Kubernetes resource of any Pulumi
// program judged against the contract and the allowlist by the exposure model, before it is created.
import * as path from "node:path";
import { PolicyPack, type ReportViolation, type ResourceValidationArgs } from "@pulumi/policy";
import * as pulumi from "@pulumi/pulumi";
import { defaultContractPath, loadContractFile } from "../src/adapters/contract-file";
import { type Judge, opaqueRelease, packJudge, undeclaredExposure } from "./judge";

/**
 * The stack's configuration ("ui-exposure:allowlist": JSON text...): the engine gives it to the
 * language host (ConfigureStack), which starts the pack with it in PULUMI_CONFIG.
 */
const stackConfig = new Map(Object.entries(pulumi.runtime.allConfig()));

/**
 * @pulumi/policy hands a resource's inputs over as a proxy that throws on reading a value unknown at
 * preview, but that makes a new proxy at every read (`props.spec.ports[0] !== props.spec.ports[0]`),
 * and the model's readers may read a value many times. The same inputs as plain
 * data, a value unknown at preview still throwing that library's error when read, so that the
 * library reports the resource as not judged yet. Its proxy module is internal: read as it is in 1.21.
 */
const proxy = require("@pulumi/policy/proxy") as Record<string, unknown> & { UnknownValueError: new (sentinel: string, path: string[]) => Error };
const UNKNOWN = new Set(Object.entries(proxy).flatMap(([k, v]) => (/^unknown\w+Value$/.test(k) && typeof v === "string" ? [v] : [])));
function plain(value: unknown, path: string[] = []): unknown {
  if (value === null || typeof value !== "object") return value;
  const out: Record<string, unknown> = Array.isArray(value) ? ([] as unknown as Record<string, unknown>) : {};
  for (const [key, v] of Object.entries(value)) {
    if (typeof v === "string" && UNKNOWN.has(v))
      Object.defineProperty(out, key, {
        enumerable: true,
        get: () => {
          throw new proxy.UnknownValueError(v, [...path, key]);
        },
      });
    else out[key] = plain(v, [...path, key]);
  }
  return out;
}
const inputsOf = (args: ResourceValidationArgs) => plain((args.props as Record<string, unknown>)[proxy.getSpecialProxyTarget as string]);

/** The project this pack ships in (dist/index.js is two folders down): the program's folder, from which it resolves its contract. */
const projectDir = path.resolve(__dirname, "../..");
/** The contract as the program reads it: a path relative to the project, bounded (no FIFO, no /dev/zero); none: its default. */
function loadContract(file: string | undefined) {
  const resolved = file === undefined ? defaultContractPath(projectDir) : path.resolve(projectDir, file);
  return loadContractFile(resolved, file ?? path.relative(projectDir, resolved));
}

// The configuration does not change during a run: read (and the contract file parsed) once.
let judged: { key: string; judge: Judge | { problem: string } } | undefined;
function judgeOf(args: ResourceValidationArgs): Judge {
  const config = args.getConfig<Record<string, unknown>>();
  const key = JSON.stringify(config);
  if (judged?.key !== key) judged = { key, judge: packJudge(config, stackConfig, loadContract) };
  // A string, not an Error: @pulumi/policy shows an Error's stack; the problem alone is the message.
  if ("problem" in judged.judge) throw judged.judge.problem;
  return judged.judge;
}

new PolicyPack("ui-exposure", {
  policies: [
    {
      name: "undeclared-exposure",
      description:
        "A Service of type NodePort or LoadBalancer or with externalIPs, or a pod or workload template with a hostPort or on the host network, is declared by the contract or the allowlist.",
      enforcementLevel: "mandatory",
      configSchema: {
        properties: {
          contract: { type: ["string", "object"] },
          entries: { type: ["string", "array"] },
          allowlist: {
            type: "object",
            properties: { services: { type: "array" }, hostPorts: { type: "array" } },
          },
        },
      },
      validateResource: (args: ResourceValidationArgs, report: ReportViolation) => {
        if (!args.type.startsWith("kubernetes:")) return;
        for (const message of undeclaredExposure(judgeOf(args), args.type, inputsOf(args))) report(message);
      },
    },
    {
      name: "opaque-helm-release",
      description: "A Helm v3 Release installs objects no policy sees: their exposure is judged only once they exist (the admission guard, exposure drift).",
      // Reported, not refused: the pack cannot judge what it cannot see, and this project's own
      // l4 stack installs Cilium as such a release. A pipeline may make it mandatory.
      enforcementLevel: "advisory",
      validateResource: (args: ResourceValidationArgs, report: ReportViolation) => {
        const message = opaqueRelease(args.type, inputsOf(args));
        if (message) report(message);
      },
    },
  ],
});
