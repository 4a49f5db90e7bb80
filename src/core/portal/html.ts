// The portal page, rendered on the server: it must work without JavaScript, on a phone, and with no asset from outside (the cluster network may not reach
// the internet), so the CSS is inline and there is no script at all.
import type { Verdict } from "../observe";
import { PENDING_NODE_PORT } from "../plan";
import type { PortalEntry, PortalError, PortalView } from "./view";

const ESCAPES: Readonly<Record<string, string>> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/** Escapes text for HTML content and double- or single-quoted attributes. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

const LABELS: Readonly<Record<Verdict, string>> = { MATCH: "MATCH", DRIFT: "DRIFT", ABSENT: "ABSENT", "NOT-EXPOSED": "not exposed" };

const STYLE = `
:root{color-scheme:light dark;--fg:#1b1f24;--muted:#59636e;--bg:#fff;--line:#d1d9e0;--ok:#116329;--okbg:#dafbe1;--warn:#7d4e00;--warnbg:#fff1c2;--bad:#a40e26;--badbg:#ffebe9;--link:#0550ae}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;--line:#3d444d;--ok:#7ee787;--okbg:#0f2d1a;--warn:#f2cc60;--warnbg:#3a2a00;--bad:#ffa198;--badbg:#4a1116;--link:#79c0ff}}
*{box-sizing:border-box}
body{margin:0;padding:1rem;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:72rem;margin:0 auto}
h1{font-size:1.4rem;margin:0 0 .25rem}
.meta,.foot,small{color:var(--muted)}
.meta{margin:0 0 1rem;font-size:.9rem}
a{color:var(--link)}
.summary{display:flex;flex-wrap:wrap;gap:.5rem;margin:0 0 1rem;padding:0;list-style:none}
.problems,.error{border:1px solid var(--bad);background:var(--badbg);color:var(--bad);padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem}
.error h2{margin:0 0 .5rem;font-size:1.1rem}
table{width:100%;border-collapse:collapse}
th,td{text-align:left;vertical-align:top;padding:.5rem;border-bottom:1px solid var(--line)}
th{font-size:.85rem;color:var(--muted)}
td small{display:block}
.url,.ready{white-space:nowrap}
.url .last{color:var(--muted)}
.badge{display:inline-block;font-weight:600;font-size:.85rem;padding:.1rem .45rem;border-radius:4px;border:1px solid currentColor}
.v-MATCH{color:var(--ok);background:var(--okbg)}
.v-DRIFT{color:var(--warn);background:var(--warnbg)}
.v-ABSENT{color:var(--bad);background:var(--badbg)}
.v-NOT-EXPOSED{color:var(--muted)}
.reasons{margin:.35rem 0 0;padding-left:1.1rem;font-size:.9rem}
.r-ok{color:var(--ok);background:var(--okbg)}
.r-bad{color:var(--bad);background:var(--badbg)}
.r-none{color:var(--muted)}
tr.group th{font-size:1rem;color:var(--fg);padding-top:1.25rem;border-bottom:2px solid var(--line)}
.json{font-size:.8rem}
@media (max-width:40rem){
 body{padding:.75rem}
 thead{display:none}
 table,tbody,tr,td{display:block;width:100%}
 tr{border:1px solid var(--line);border-radius:6px;margin:0 0 .75rem;padding:.25rem .5rem}
 td{border:0;padding:.3rem 0;display:grid;grid-template-columns:6.5rem minmax(0,1fr);gap:.5rem}
 td::before{content:attr(data-label);color:var(--muted);font-size:.85rem}
 tr.group{border:0;margin:1rem 0 .5rem;padding:0}
 tr.group th{display:block;padding:0;border:0}
 .url,.ready{white-space:normal}
 .url .host{overflow-wrap:anywhere}
 .url .port{white-space:nowrap}
}
`;

function page(title: string, body: string, refreshSeconds?: number): string {
  // Auto-refresh without any script (the CSP forbids scripts): opt-in through ?refresh=N.
  const refresh = refreshSeconds ? `<meta http-equiv="refresh" content="${Math.trunc(refreshSeconds)}">\n` : "";
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refresh}<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body><main>${body}</main></body>
</html>
`;
}

const heading = (stack: string | undefined) => `Platform UIs${stack ? ` · ${stack}` : ""}`;

/** Only observed http(s) URLs become links; a pending port or anything else stays text. */
function linkable(url: string | undefined): url is string {
  return url !== undefined && /^https?:\/\/[^\s<>"']+$/.test(url) && !url.includes(PENDING_NODE_PORT);
}

function readiness(e: PortalEntry): string {
  if (e.verdict === "NOT-EXPOSED" || e.verdict === "ABSENT") return "—";
  if (e.exposure === "hostPort") return e.readyEndpoints > 0 ? "pod ready" : "pod not ready";
  return `${e.readyEndpoints} ready endpoint${e.readyEndpoints === 1 ? "" : "s"}`;
}

/** "just now", "12 s ago", "3 min ago", "2 h ago", "4 d ago": the viewer's terms, not an ISO string. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 1) return "just now";
  if (s < 120) return `${s} s ago`;
  if (s < 7200) return `${Math.round(s / 60)} min ago`;
  if (s < 172800) return `${Math.round(s / 3600)} h ago`;
  return `${Math.round(s / 86400)} d ago`;
}

const ageOf = (iso: string, now: Date) => formatAge(now.getTime() - new Date(iso).getTime());
const timeTag = (iso: string, now: Date) => `<time datetime="${escapeHtml(iso)}" title="${escapeHtml(iso)}">${ageOf(iso, now)}</time>`;
const listItems = (texts: readonly string[]) => texts.map((t) => `<li>${escapeHtml(t)}</li>`).join("");

/** A URL as text that wraps between host and port only (a port split in two reads as another port); a host too long (IPv6) may still break. */
function urlText(url: string): string {
  const m = /^([a-z][a-z0-9+.-]*:\/\/(?:\[[^\]]*\]|[^:/?#]*))(:\d+.*)$/i.exec(url);
  if (!m) return escapeHtml(url);
  return `<span class="host">${escapeHtml(m[1] ?? "")}</span><wbr><span class="port">${escapeHtml(m[2] ?? "")}</span>`;
}

function urlCell(e: PortalEntry): string {
  if (!e.exposed) return "<small>not exposed</small>";
  const link = (url: string) => (linkable(url) ? `<a href="${escapeHtml(url)}">${urlText(url)}</a>` : `<span>${urlText(url)}</span>`);
  // Moved since the last up: the URL users have comes first; the live one is where it is served now.
  if (e.url && e.publishedUrl) return `${link(e.publishedUrl)}<small>published URL · served now on ${link(e.url)}</small>`;
  if (e.url) return link(e.url);
  if (e.lastPublishedUrl) return `<span class="last">${urlText(e.lastPublishedUrl)}</span><small>last published URL · not answering</small>`;
  return "<small>no URL</small>";
}

function reachabilityCell(e: PortalEntry, view: PortalView, now: Date): string {
  const r = e.reachability;
  if (!r && (!e.exposed || !linkable(e.url))) return '<span class="r-none">—</span>';
  if (!r) return view.reachability.enabled ? "<small>not checked yet</small>" : "<small>probing off</small>";
  const [cls, word] = r.ok ? ["r-ok", "OK"] : ["r-bad", "NOT OK"];
  const badge = `<span class="badge ${cls}">${word}${r.status !== null ? ` ${r.status}` : ""}</span>`;
  const details = [
    ...(r.error ? [escapeHtml(r.error)] : []),
    ...(r.location ? [`redirects to ${escapeHtml(r.location)} (not followed)`] : []),
    ...(r.latencyMs !== null ? [`${r.latencyMs} ms`] : []),
    ...(r.tlsVerified === false ? ["TLS not verified"] : []),
    `checked ${timeTag(r.checkedAt, now)}`,
  ];
  return `${badge}<small>${details.join(" · ")}</small>`;
}

/** Where a row links its JSON, and how its id is prefixed: `api/entries/` for one stack, `api/stacks/<stack>/entries/` for several. */
type RowPlace = { api: string; id: string };

function row(e: PortalEntry, view: PortalView, now: Date, place: RowPlace = { api: "api/entries/", id: "entry-" }): string {
  const reasons = e.reasons.length ? `<ul class="reasons">${listItems(e.reasons)}</ul>` : "";
  // One <div> per cell: on a phone each cell is a two-column grid (label, content).
  const cell = (label: string, content: string, cls?: string) => `<td data-label="${label}"${cls ? ` class="${cls}"` : ""}><div>${content}</div></td>`;
  const name = escapeHtml(e.name);
  const reachable = e.reachability ? ` data-reachable="${e.reachability.ok}"` : "";
  const json = `<small><a class="json" href="${escapeHtml(place.api)}${encodeURIComponent(e.name)}">JSON</a></small>`;
  return [
    `<tr id="${escapeHtml(place.id)}${name}" data-entry="${name}" data-verdict="${e.verdict}"${reachable}>`,
    cell("Name", `<strong>${name}</strong>${e.description ? `<small>${escapeHtml(e.description)}</small>` : ""}${json}`),
    cell("Namespace", escapeHtml(e.namespace ?? "—")),
    cell("URL", urlCell(e), "url"),
    cell("Ready", escapeHtml(readiness(e)), "ready"),
    cell("Verdict", `<span class="badge v-${e.verdict}">${LABELS[e.verdict]}</span>${reasons}`),
    cell("Answers", reachabilityCell(e, view, now), "reach"),
    "</tr>",
  ].join("");
}

const COLUMNS = ["Name", "Namespace", "URL", "Ready", "Verdict", "Answers"] as const;

/** Entries in the contract's groups, in the order groups first appear; ungrouped entries last. */
export function groupEntries(entries: readonly PortalEntry[]): { group?: string; entries: PortalEntry[] }[] {
  const groups = [...new Set(entries.map((e) => e.group))].filter((g) => g !== undefined);
  const named = groups.map((group) => ({ group, entries: entries.filter((e) => e.group === group) }));
  const rest = entries.filter((e) => e.group === undefined);
  return rest.length ? [...named, { entries: rest }] : named;
}

function metaLine(view: PortalView, now: Date): string {
  const parts = [`observed ${timeTag(view.observedAt, now)} from ${escapeHtml(view.source)}`];
  if (view.node) parts.push(`node ${escapeHtml(view.node.name)} (${escapeHtml(view.node.address)}${view.node.pinned ? ", pinned by the stack" : ""})`);
  if (view.contract) parts.push(`contract ${escapeHtml(view.contract)}`);
  return `<p class="meta">${parts.join(" · ")}</p>`;
}

export interface PageOptions {
  /** Seconds between automatic reloads (a meta refresh, no script); none by default. */
  refreshSeconds?: number;
}

/** The cluster's undeclared exposure, in the words `exposure status` and `exposure drift` give it (the audit's reason and fix). */
function undeclaredBlock(u: PortalView["undeclared"] = { count: 0, shown: [] }): string {
  if ("unread" in u) return `<p class="foot">Undeclared exposure: not checked (${escapeHtml(u.unread)}).</p>`;
  if (!u.count) return "";
  const items = u.shown.map(
    (e) => `<li>${escapeHtml(`${e.kind} ${e.namespace}/${e.name} (${e.ports}): ${e.reason}`)}<br>fix: <code>${escapeHtml(e.fix)}</code></li>`,
  );
  const more = u.count <= u.shown.length ? "" : `<li>and ${u.count - u.shown.length} more: exposure drift lists them all</li>`;
  return `<div class="problems" role="alert"><strong>Undeclared exposure: ${u.count}</strong> (neither the contract nor the allowlist declares it)<ul>${items.join("")}${more}</ul></div>`;
}

/** One view's summary, problems and table (the page of one stack, a section of the page of several). */
function viewBody(view: PortalView, now: Date, place?: RowPlace): string[] {
  // Probed, and not answering as the contract expects.
  const failingCount = view.entries.filter((e) => e.reachability?.ok === false).length;
  const counts = (["MATCH", "DRIFT", "ABSENT", "NOT-EXPOSED"] as const)
    .filter((v) => view.summary[v] > 0)
    .map((v) => `<li><span class="badge v-${v}">${view.summary[v]} ${LABELS[v]}</span></li>`)
    .concat(failingCount ? [`<li><span class="badge r-bad">${failingCount} not answering</span></li>`] : [])
    .join("");
  const problems = view.problems.length ? `<div class="problems" role="alert"><strong>Problems</strong><ul>${listItems(view.problems)}</ul></div>` : "";
  const grouped = groupEntries(view.entries);
  const anyGroup = grouped.some((g) => g.group !== undefined);
  const bodies = grouped.map((g) => {
    // Headings only when the contract uses groups; the ungrouped rest is then "Other".
    const heading = anyGroup ? `<tr class="group"><th colspan="${COLUMNS.length}" scope="rowgroup">${escapeHtml(g.group ?? "Other")}</th></tr>` : "";
    return `<tbody${g.group !== undefined ? ` data-group="${escapeHtml(g.group)}"` : ""}>${heading}${g.entries.map((e) => row(e, view, now, place)).join("\n")}</tbody>`;
  });
  return [
    metaLine(view, now),
    problems,
    undeclaredBlock(view.undeclared),
    `<ul class="summary">${counts}</ul>`,
    `<table><thead><tr>${COLUMNS.map((c) => `<th scope="col">${c}</th>`).join("")}</tr></thead>`,
    `${bodies.join("\n")}</table>`,
  ];
}

function footer(view: Pick<PortalView, "reachability">, opts: PageOptions, api: string): string {
  const probing = view.reachability.enabled
    ? `Answers: the portal's own GET of each URL (redirects not followed, TLS not verified), reused for ${view.reachability.cacheSeconds ?? "?"} s.`
    : "Answers: probing is off.";
  const refresh = opts.refreshSeconds
    ? `Reloads every ${Math.trunc(opts.refreshSeconds)} s · <a href="./">Stop auto-refresh</a>`
    : '<a href="?refresh=30">Auto-refresh (30 s)</a>';
  return `<p class="foot">${probing} <a href=".">Reload</a> · ${refresh} · <a href="${api}">JSON</a></p>`;
}

/** The page: every contract entry with its observed URL, readiness, verdict and whether it answers. */
export function renderPage(view: PortalView, opts: PageOptions = {}): string {
  const now = new Date(view.generatedAt);
  const body = [`<h1>${escapeHtml(heading(view.stack))}</h1>`, ...viewBody(view, now), footer(view, opts, "api/entries")].join("\n");
  return page(heading(view.stack), body, opts.refreshSeconds);
}

/** One stack of a portal over several: its last view (stale: its last read failed, `error` says why), or only the error before any read succeeded. */
export interface StackSection {
  stack: string;
  source: string;
  view?: PortalView;
  error?: string;
}

/** Several stacks: a filter line, then each stack's section; one whose cluster stops answering keeps its last rows, stale, with the cause and the age. */
export function renderStacksPage(sections: readonly StackSection[], at: Date, opts: PageOptions & { only?: string } = {}): string {
  const shown = sections.filter((s) => opts.only === undefined || s.stack === opts.only);
  const filter = [`<a href="./">all stacks</a>`, ...sections.map((s) => `<a href="?stack=${encodeURIComponent(s.stack)}">${escapeHtml(s.stack)}</a>`)];
  const body = [`<h1>Platform UIs · ${sections.length} stacks</h1>`, `<p class="meta">Stacks: ${filter.join(" · ")}</p>`];
  for (const s of shown) {
    const name = escapeHtml(s.stack);
    body.push(`<section id="stack-${name}" data-stack="${name}"${s.error ? ' data-stale="true"' : ""}>`, `<h2>${name}</h2>`);
    if (s.error) {
      const since = s.view ? `; the rows below are its last successful read, ${ageOf(s.view.observedAt, at)}` : "; nothing was read from it yet";
      body.push(`<div class="error" role="alert"><strong>Cannot read ${escapeHtml(s.source)}</strong>: ${escapeHtml(s.error)}${since}</div>`);
    }
    if (s.view) body.push(...viewBody(s.view, at, { api: `api/stacks/${encodeURIComponent(s.stack)}/entries/`, id: `entry-${s.stack}-` }));
    body.push("</section>");
  }
  const reach = shown.find((s) => s.view)?.view ?? { reachability: { enabled: false } };
  body.push(footer(reach, opts, "api/stacks"));
  return page(`Platform UIs · ${sections.length} stacks`, body.join("\n"), opts.refreshSeconds);
}

/** The page when the cluster cannot be read: an error, never a table, so nobody takes an unreachable cluster for "nothing is exposed" or "all fine". */
export function renderErrorPage(error: PortalError, opts: PageOptions = {}): string {
  const body = `<h1>${escapeHtml(heading(error.stack))}</h1>
<p class="meta">attempted ${escapeHtml(error.generatedAt)} from ${escapeHtml(error.source)}</p>
<section class="error" role="alert">
<h2>Cannot read the cluster</h2>
<p>${escapeHtml(error.error)}</p>
<p>The state of the UIs is unknown: no URL or verdict can be shown until the cluster answers.</p>
</section>
<p class="foot"><a href="${opts.refreshSeconds ? `?refresh=${Math.trunc(opts.refreshSeconds)}` : "."}">Try again</a></p>`;
  // An auto-refreshing wall screen keeps refreshing, so it recovers once the cluster answers.
  return page(`${heading(error.stack)} · cluster unreadable`, body, opts.refreshSeconds);
}
