// `exposure access`'s view: how to reach each entry from here, the contract's credentials, the .env from a versioned template (pure: the command does I/O).
import { BASE64 } from "./cilium/release";
import type { Contract, Credential, Endpoint } from "./contract/schema";
import { UserError } from "./errors";
import type { Secret, Service } from "./kube/types";
import type { Observation, Verdict } from "./observe";
import { findServicePort, indexServices } from "./plan";
import { hasControlCharacters } from "./text";

/** How the developer reaches one contract entry from this machine. */
export interface AccessEndpoint {
  name: string;
  description?: string;
  exposed: boolean;
  scheme: string;
  /** node: the published URL; forward: a 127.0.0.1 SSH forward to it; in-cluster: the Service's DNS name (for code in the cluster); none: no address. */
  reach: "node" | "forward" | "in-cluster" | "none";
  url?: string;
  host?: string;
  port?: number;
  /** The live verdict of a published entry. */
  verdict?: Verdict;
  /** The published URL behind a forward. */
  forwardOf?: string;
  /** Why there is no address (reach "none"), or what is wrong with it (DRIFT). */
  problem?: string;
}

/** One credential of the contract, read from its Secret. `password` is the secret part. */
export interface CredentialView {
  entry: string;
  label: string;
  /** "namespace/name" of the Secret. */
  secret: string;
  username?: string;
  password?: string;
  /** Why it could not be read (no Secret, missing key, forbidden). Never holds a value. */
  problem?: string;
}

/** A namespace's Secrets, or why they could not be listed (403...). */
export type NamespaceSecrets = readonly Secret[] | { error: string };

/** Contract entries the stack is concerned with: the ones `observe()` lists (published + not exposed). */
export function accessEntries(contract: Contract, observation: Observation): Endpoint[] {
  const listed = new Set(observation.entries.map((e) => e.name));
  return contract.endpoints.filter((e) => listed.has(e.name));
}

/** Every entry of the view with an address: the published URL (or its forward), else the Service's in-cluster DNS name. */
export function accessEndpoints(
  contract: Contract,
  observation: Observation,
  services: readonly Service[],
  forwards: ReadonlyMap<string, string> = new Map(),
): AccessEndpoint[] {
  const observed = new Map(observation.entries.map((o) => [o.name, o]));
  const servicesByKey = indexServices(services);
  return contract.endpoints.map((e): AccessEndpoint => {
    const base = { name: e.name, ...(e.description ? { description: e.description } : {}), exposed: e.exposed, scheme: e.scheme };
    const o = observed.get(e.name);
    if (o && o.exposure !== "none") {
      if (!o.url) return { ...base, reach: "none", verdict: o.verdict, problem: o.reasons[0] ?? "no URL observed" };
      const forwarded = forwards.get(e.name);
      const target = new URL(forwarded ?? o.url);
      return {
        ...base,
        reach: forwarded ? "forward" : "node",
        url: forwarded ?? o.url,
        host: target.hostname.replace(/^\[|\]$/g, ""),
        port: Number(target.port),
        verdict: o.verdict,
        ...(forwarded ? { forwardOf: o.url } : {}),
        ...(o.verdict === "MATCH" ? {} : { problem: o.reasons.join("; ") }),
      };
    }
    if (!e.service) return { ...base, reach: "none", problem: "a hostPort entry this stack does not publish" };
    const ref = e.service;
    const svc = servicesByKey.get(`${ref.namespace}/${ref.name}`);
    if (!svc) return { ...base, reach: "none", problem: `Service ${ref.namespace}/${ref.name} not found` };
    const port = findServicePort(svc, ref.port)?.port;
    if (port === undefined) return { ...base, reach: "none", problem: `Service ${ref.namespace}/${ref.name} has no port ${ref.port}` };
    const host = `${ref.name}.${ref.namespace}.svc.cluster.local`;
    return { ...base, reach: "in-cluster", url: `${e.scheme}://${host}:${port}`, host, port };
  });
}

/** Namespaces holding the Secrets of these entries' credentials: one list call each. */
export function credentialNamespaces(entries: readonly Endpoint[]): string[] {
  return [...new Set(entries.flatMap((e) => (e.credentials ?? []).map((c) => c.secret.namespace)))].sort();
}

/** A Secret value, or undefined when it is not base64 text (the caller says so without showing it). */
const decode = (value: unknown): string | undefined =>
  typeof value === "string" && BASE64.test(value) ? Buffer.from(value, "base64").toString("utf8") : undefined;

function readCredential(entry: string, c: Credential, secrets: NamespaceSecrets | undefined): CredentialView {
  const where = `${c.secret.namespace}/${c.secret.name}`;
  const view: CredentialView = { entry, label: c.label, secret: where, ...(c.username ? { username: c.username } : {}) };
  if (!secrets) return { ...view, problem: `Secrets of namespace ${c.secret.namespace} were not read` };
  if ("error" in secrets) return { ...view, problem: secrets.error };
  const secret = secrets.find((s) => s.metadata.name === c.secret.name);
  if (!secret) return { ...view, problem: `Secret ${where} not found` };
  const data = secret.data ?? {};
  // Key names are not secret; listing them helps fix a wrong usernameKey/passwordKey.
  const keys = Object.keys(data).sort().join(", ") || "none";
  const problems: string[] = [];
  // A key the Secret lacks leaves `ifMissing` (the fixed user name); one not in base64, nothing.
  const read = (key: string, ifMissing?: string) => {
    const raw = data[key];
    if (raw === undefined) {
      problems.push(`Secret ${where} has no key '${key}' (keys: ${keys})`);
      return ifMissing;
    }
    const value = decode(raw);
    if (value === undefined) problems.push(`Secret ${where}: key '${key}' is not valid base64 (value not shown)`);
    return value;
  };
  const username = c.usernameKey !== undefined ? read(c.usernameKey, c.username) : c.username;
  const password = read(c.passwordKey);
  return {
    ...view,
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(problems.length ? { problem: problems.join("; ") } : {}),
  };
}

/** Every credential the entries declare, in contract order, read from the listed Secrets. */
export function readCredentials(entries: readonly Endpoint[], secretsByNamespace: ReadonlyMap<string, NamespaceSecrets>): CredentialView[] {
  return entries.flatMap((e) => (e.credentials ?? []).map((c) => readCredential(e.name, c, secretsByNamespace.get(c.secret.namespace))));
}

const PLACEHOLDER = /\{\{\s*([^}|\s]+)\s*(?:\|\s*([^}\s]+)\s*)?\}\}/g;
const REFERENCE = /^([a-z][a-z0-9-]*)\.(?:(url|scheme|host|port|hostport|username|password)|credentials\[(\d+)\]\.(username|password))$/;
const ENDPOINT_FIELDS = new Set(["url", "scheme", "host", "port", "hostport"]);
/** RFC 3986 strict: also encodes !'()* so that an encoded value never needs quoting in the .env. */
const urlencode = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** A placeholder's value, or why it has none (never a secret in `reason`); `source`: where a secret value comes from, for a refusal. */
type Resolved = { value: string; source?: string } | { reason: string };

/** Resolves `entry.field` against the access view; throws on a malformed reference (a template bug). */
export function resolveReference(
  reference: string,
  view: { contract: Contract; endpoints: readonly AccessEndpoint[]; credentials: readonly CredentialView[] },
): Resolved {
  const m = REFERENCE.exec(reference);
  if (!m) {
    throw new Error(
      `unknown placeholder '{{${reference}}}': use ENTRY.url|scheme|host|port|hostport|username|password or ENTRY.credentials[N].username|password`,
    );
  }
  const [, entry = "", field, index, credentialField] = m;
  if (!view.contract.endpoints.some((e) => e.name === entry)) return { reason: `the contract has no entry '${entry}'` };
  if (field && ENDPOINT_FIELDS.has(field)) {
    const ep = view.endpoints.find((e) => e.name === entry);
    if (!ep || ep.reach === "none" || !ep.url || !ep.host || ep.port === undefined) return { reason: `${entry}: ${ep?.problem ?? "no address"}` };
    const values: Record<string, string> = {
      url: ep.url,
      scheme: ep.scheme,
      host: ep.host,
      port: String(ep.port),
      hostport: `${ep.host.includes(":") ? `[${ep.host}]` : ep.host}:${ep.port}`,
    };
    return { value: values[field] as string };
  }
  const n = index !== undefined ? Number(index) : 0;
  const wanted = (credentialField ?? field) as "username" | "password";
  const credential = view.credentials.filter((c) => c.entry === entry)[n];
  if (!credential) return { reason: `${entry} declares no credential #${n} in the contract` };
  const value = credential[wanted];
  if (value === undefined) return { reason: `${credential.label}: ${credential.problem ?? `no ${wanted}`}` };
  return { value, source: `Secret ${credential.secret}` };
}

/** Characters a .env value may hold unquoted, in every dotenv dialect (shell, docker compose, python-dotenv). */
const SAFE_UNQUOTED = /^[A-Za-z0-9_./:@%+=,-]*$/;

/** A .env value read back identically by bash, python-dotenv, docker compose and Node (docs/commands.md, ".env values"), else refused without showing it. */
export function quoteEnvValue(value: string): { text: string } | { refused: string } {
  if (SAFE_UNQUOTED.test(value)) return { text: value };
  if (/[\n\r]/.test(value) || hasControlCharacters(value)) {
    return { refused: "the value holds a newline or a control character, which no .env syntax carries the same way everywhere" };
  }
  if (value.includes("${")) {
    return { refused: "the value holds '${', which python-dotenv and docker compose expand as a variable in every quoting; change it or set it by hand" };
  }
  if (!unsafeInQuotes(value, "'")) return { text: `'${value}'` };
  if (!unsafeInQuotes(value, '"')) return { text: `"${value}"` };
  return {
    refused:
      "the value holds a single quote together with one of \" $ \\ ` (or a backslash before \\ or '), which bash, python-dotenv, docker compose and Node read back differently; change it or set it by hand",
  };
}

/** The quotes a template author put around a whole value, or undefined (then the generator quotes). */
const authorQuotes = (rawValue: string): "'" | '"' | undefined => (/^'[^']*'$/.test(rawValue) ? "'" : /^"(?:[^"\\]|\\.)*"$/.test(rawValue) ? '"' : undefined);

/**
 * Why a substituted value cannot go inside the author's quotes, or undefined when bash, python-dotenv, docker compose and Node all read it back unchanged there
 * (the unquoted path's guarantee). Values are refused, not escaped: Secrets may be written by someone else.
 */
function unsafeInQuotes(value: string, quote: "'" | '"'): string | undefined {
  if (/[\n\r]/.test(value) || hasControlCharacters(value)) return "holds a newline or a control character";
  if (quote === "'") {
    if (value.includes("'")) return "holds a ' (it would end the template's single quotes)";
    if (value.includes("${")) return "holds '${', which python-dotenv and docker compose expand even in single quotes";
    if (/\\(\\|'|$)/.test(value)) return "holds a backslash before \\, ' or the end, which python-dotenv decodes in single quotes";
    return undefined;
  }
  // No escape of these reads back the same in python-dotenv and Node.
  if (/["\\$`]/.test(value)) return "holds one of \" \\ $ ` (each is expanded or unescaped inside the template's double quotes)";
  return undefined;
}

export interface RenderedEnv {
  text: string;
  /** Variables written as comments because a value is missing, with the reason. */
  unresolved: { variable: string; reason: string }[];
}

/** Expands placeholders in `KEY=VALUE` lines only (never in a comment: no secret ends up in one); a line that cannot be resolved is written commented out. */
export function renderEnvTemplate(template: string, templateName: string, resolve: (reference: string) => Resolved, header: string[]): RenderedEnv {
  const out = header.length ? [...header.map((h) => `# ${h}`), ""] : [];
  const unresolved: RenderedEnv["unresolved"] = [];
  const lines = template.split("\n");
  // The template's opening comment block documents the template itself: `header` replaces it.
  const intro = lines.findIndex((l) => !l.trim().startsWith("#"));
  const bodyStart = intro > 0 && lines[intro]?.trim() === "" ? intro + 1 : 0;
  lines.forEach((line, i) => {
    if (i < bodyStart) return;
    const trimmed = line.trim();
    if (trimmed === "" || trimmed.startsWith("#")) {
      out.push(line);
      return;
    }
    const where = `${templateName}:${i + 1}`;
    const m = /^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(trimmed);
    if (!m) throw new UserError(`${where}: expected KEY=VALUE, a comment or a blank line`);
    const [, variable = "", rawValue = ""] = m;
    const reasons: string[] = [];
    const quotes = authorQuotes(rawValue);
    const unsafe: string[] = [];
    const sources: string[] = [];
    let value: string;
    try {
      value = rawValue.replace(PLACEHOLDER, (match, reference: string, filter: string | undefined) => {
        const resolved = resolve(reference);
        if ("reason" in resolved) {
          reasons.push(resolved.reason);
          return "";
        }
        if (filter !== undefined && filter !== "urlencode") throw new Error(`unknown filter '|${filter}' (known: urlencode)`);
        const text = filter === undefined ? resolved.value : urlencode(resolved.value);
        const name = `${match.replace(/\s+/g, "")}${resolved.source ? ` (${resolved.source})` : ""}`;
        sources.push(name);
        // Inside the author's quotes, each value must be inert there: named, never shown.
        const why = quotes && unsafeInQuotes(text, quotes);
        if (why) unsafe.push(`the value of ${name} ${why}`);
        return text;
      });
    } catch (err) {
      throw new UserError(`${where}: ${(err as Error).message}`);
    }
    // The template's own text, not a value put in it: a Secret may well hold "}}".
    const text = rawValue.replace(PLACEHOLDER, "");
    if (text.includes("{{") || text.includes("}}")) throw new UserError(`${where}: malformed placeholder in ${variable}`);
    if (reasons.length) {
      const reason = [...new Set(reasons)].join("; ");
      unresolved.push({ variable, reason });
      out.push(`# ${variable}= (unresolved: ${reason})`);
      return;
    }
    // A value the template author quoted keeps their quotes, once every value put inside is inert there; everything else is quoted as needed.
    const quoted = quotes ? (unsafe.length ? { refused: `${unsafe.join("; ")}; change it or set it by hand` } : { text: value }) : quoteEnvValue(value);
    if ("refused" in quoted) {
      // Named by where the value came from, never shown.
      const reason = quotes || !sources.length ? quoted.refused : `${quoted.refused} (value from ${sources.join(", ")})`;
      unresolved.push({ variable, reason });
      out.push(`# ${variable}= (not written: ${reason})`);
      return;
    }
    out.push(`${variable}=${quoted.text}`);
  });
  return { text: `${out.join("\n").replace(/\n+$/, "")}\n`, unresolved };
}
