// Small helpers shared by the benchmark parts: statistics, markdown, a fake API server's kubeconfig.
import * as fs from "node:fs";
import * as path from "node:path";

export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

export const round = (v: number, digits = 1) => Math.round(v * 10 ** digits) / 10 ** digits;

export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  return [`| ${headers.join(" | ")} |`, `|${headers.map(() => "---").join("|")}|`, ...rows.map((r) => `| ${r.join(" | ")} |`)].join("\n");
}

export const ms = (v: number) => (Number.isFinite(v) ? Math.round(v).toString() : "-");

/** `dir`/kubeconfig (0600): context `fake`, the plain-HTTP API server on 127.0.0.1:`port`. */
export function writeKubeconfig(dir: string, port: number): string {
  const file = path.join(dir, "kubeconfig");
  fs.writeFileSync(
    file,
    `apiVersion: v1\nkind: Config\nclusters:\n  - name: fake\n    cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true }\nusers:\n  - name: bench\n    user: { token: bench }\ncontexts:\n  - name: fake\n    context: { cluster: fake, user: bench }\ncurrent-context: fake\n`,
    { mode: 0o600 },
  );
  return file;
}
