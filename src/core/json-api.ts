// Every document an `exposure` command prints with `--json` (the contract with scripts), typed so that a report change breaking it breaks the build, not a
// script in production.
import type { AccessEndpoint, CredentialView } from "./access";
import type { Refusal } from "./admission-preview";
import type { AuditResult, UndeclaredExposure } from "./audit";
import type { Finding, JSON_API_VERSION } from "./findings";
import type { ObservedEntry } from "./observe";
import type { NodeChoice } from "./plan";
import type { StackSection } from "./portal/html";
import type { PortalEntry, PortalError, PortalView } from "./portal/view";

interface Document<K extends string> {
  apiVersion: typeof JSON_API_VERSION;
  kind: K;
}

/** `exposure check --json`: a valid contract's summary, or its problems as findings (exit 2). */
export type CheckDocument = Document<"ContractCheck"> & { file: string; findings: readonly Finding[] } & (
    | { valid: true; endpoints: number; exposed: readonly string[] }
    | { valid: false }
  );

/** `exposure render --json`: what the stack would create. */
export interface RenderDocument extends Document<"Render"> {
  objects: Record<string, unknown>[];
  releases: { chart: string; version: string; namespace: string; name: string; repository?: string; values: Record<string, unknown> }[];
  outputs: Record<string, unknown>;
}

/** `exposure status --json`. */
export interface StatusDocument extends Document<"Status"> {
  stack: string;
  /** The kube context / server read. */
  source: string;
  publishedOutputs: { from: "pulumi" | "file"; file?: string } | { from: "unavailable" | "no-stack"; reason: string };
  node?: NodeChoice;
  /** Every exposed entry is MATCH and nothing concerns the whole view. */
  ok: boolean;
  entries: readonly ObservedEntry[];
  problems: readonly string[];
  /** Without --entry: the cluster's exposure neither the contract nor the allowlist declares (drift's audit), each with its fix. */
  undeclared?: readonly UndeclaredExposure[];
  /** Without --entry, when the cluster's Services and Pods could not be listed: why (nothing is said of undeclared exposure). */
  undeclaredUnread?: string;
}

/** `exposure status --json` over several stacks: each one's Status (without apiVersion and kind), or why it was not read. */
export interface StatusListDocument extends Document<"StatusList"> {
  /** Every stack read, and every one OK. */
  ok: boolean;
  stacks: readonly (Omit<StatusDocument, "apiVersion" | "kind"> | { stack: string; ok: false; error: string })[];
}

/** One resource the preview would change; `fields` is empty when Pulumi gave no detail. */
type PreviewChangeJson = { op: string; type: string; name: string; urn: string; fields: string[] };

/** `exposure drift --json`. */
export interface DriftDocument extends Document<"Drift"> {
  stack: string;
  source: string;
  drift: boolean;
  preview: { state: "no-changes" } | { state: "changes"; changes: readonly PreviewChangeJson[] } | { state: "failed"; message: string } | { state: "skipped" };
  audit: AuditResult;
  /** The live per-entry verdicts, as `exposure status` gives them. */
  status: Pick<StatusDocument, "publishedOutputs" | "node" | "entries" | "problems">;
  /** The exposure guard at admission: admission-guard-* findings (docs/commands.md); empty when it matches. */
  admission: readonly Finding[];
  // What the guard in `deny` mode would refuse of the objects that exist now (each as if created again), whatever the stack's mode; `unread`: workload
  // kinds that could not be listed.
  denyPreview: { refusals: readonly Refusal[]; unread: readonly string[] };
}

export interface ProbeResultJson {
  name: string;
  /** The URL actually requested (published URL + probe path). */
  url: string;
  ok: boolean;
  status?: number;
  /** Time to the response headers (or to the failure), in milliseconds. */
  latencyMs: number;
  /** "200" or "2xx/3xx", for the report. */
  expected: string;
  /** Redirect target of a 3xx answer (shown, never followed). */
  location?: string;
  /** Why it failed: unexpected status, refused, timeout... */
  error?: string;
}

/** `exposure probe --json`. */
export interface ProbeDocument extends Document<"Probe"> {
  ok: boolean;
  /** Always false: certificates are not verified (self-signed dashboards). */
  tlsVerified: false;
  results: readonly (ProbeResultJson & { stack?: string })[];
  /** Several stacks: those whose URLs could not be read (each one's error); the others are probed. */
  unread?: readonly { stack: string; error: string }[];
}

/** A forward `access` ended; stopped: we ended it; stale: it was already gone (its pid file is removed). */
export type StoppedForwardJson = { entry: string; pid: number; localPort: number; state: "stopped" | "stale" };

/** `exposure access --json`. Holds passwords, each as `{secret: true, value}`. */
export interface AccessDocument extends Document<"Access"> {
  stack: string;
  source: string;
  node?: NodeChoice;
  containsSecrets: boolean;
  warning?: string;
  endpoints: readonly AccessEndpoint[];
  credentials: readonly (Omit<CredentialView, "password"> & { password?: { secret: true; value: string } })[];
  envFile: { written: false; reason: string } | { written: true; path: string; mode: "0600"; unresolved: { variable: string; reason: string }[] };
  forwards: readonly { entry: string; pid: number; localUrl: string; localPort: number; target: string; state: "started" | "running" | "restarted" }[];
  retiredForwards?: readonly StoppedForwardJson[];
  forwardFailures?: readonly string[];
  problems: readonly string[];
}

/** `exposure access --stop --json`. */
export interface AccessStopDocument extends Document<"AccessStop"> {
  stack: string;
  stopped: readonly StoppedForwardJson[];
}

/** `exposure portal --json`: one line when the portal listens. */
export interface PortalDocument extends Document<"Portal"> {
  url: string;
  source: string;
  stack?: string;
  /** Several stacks: each one and where its cluster is read (`source` is the first's). */
  stacks?: readonly { stack: string; source: string }[];
}

/** The portal's `GET /api/entries`: the page's data. */
export type PortalEntriesDocument = Document<"PortalEntries"> & PortalView;

/** The portal's `GET /api/entries/<name>`: one entry with the view's context. */
export type PortalEntryDocument = Document<"PortalEntry"> & Omit<PortalView, "entries" | "summary" | "problems"> & { entry: PortalEntry };

/** `GET /api/stacks` of a portal over several stacks: each stack's view, or its last good one with the error of its last read (stale), or the error alone. */
export type PortalStacksDocument = Document<"PortalStacks"> & { generatedAt: string; stacks: readonly StackSection[] };

/** The portal's 503 body (`/api/entries...`) when the cluster cannot be read. */
export type PortalErrorDocument = Document<"PortalError"> & PortalError;

/** `exposure sandbox up --json`. */
export interface SandboxUpDocument extends Document<"SandboxUp"> {
  urls: Record<string, string>;
  portal: string;
  folder: string;
  /** What answers the URLs: kube-proxy (the data path) or the sandbox's own forwarder. */
  mode: "kube-proxy" | "forwarder";
  /** Prometheus's address with --monitoring, else "". */
  prometheus: string;
}

/** `exposure sandbox status --json`. */
export interface SandboxStatusDocument extends Document<"SandboxStatus"> {
  folder: string;
  up: boolean;
  processes: readonly { role: string; pid: number; running: boolean }[];
  urls: readonly { entry: string; url: string; answers: boolean }[];
  portal?: { url: string; answers: boolean };
  controlPlane?: { processes: readonly { role: string; pid: number; running: boolean }[]; apiServer: { url: string; answers: boolean; detail: string } };
  second?: SandboxStatusDocument["controlPlane"]; // the second cluster's (`sandbox up --second`)
  /** The data path's processes (kube-proxy, relays, the pods' servers). */
  dataPath?: { prefix: string; processes: readonly { role: string; pid: number; running: boolean }[] };
  /** Each entry that is not MATCH or does not answer: what is wrong and the command that fixes it. */
  problems: readonly { entry: string; url: string; answers: boolean; problem: string; remedy: string; repairable: boolean }[];
  /** Set when .sandbox/ is gone but its processes are recorded outside the work tree (`exposure sandbox down` stops them). */
  outsideRecord?: string;
  /** Records of .sandbox/sandbox.json that were ignored (never acted on). */
  rejected: readonly string[];
}

/** `exposure sandbox down --json`. */
export interface SandboxDownDocument extends Document<"SandboxDown"> {
  folder: string;
  stopped: readonly string[];
  removed: boolean;
  /** Other stacks whose state was in the sandbox's backend (removed with it). */
  otherStacks: readonly string[];
  /** Files left in place, and why (not proven the sandbox's). */
  kept: readonly string[];
  rejected: readonly string[];
}
