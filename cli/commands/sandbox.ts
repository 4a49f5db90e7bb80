import * as path from "node:path";
import { SANDBOX_STACK, sandboxDown, sandboxStatus, sandboxUp } from "../../src/adapters/sandbox/sandbox";
import { UserError } from "../../src/core/errors";
import { EXIT, JSON_API_VERSION } from "../../src/core/findings";
import type { SandboxDownDocument, SandboxStatusDocument, SandboxUpDocument } from "../../src/core/json-api";
import { printableValue } from "../../src/core/text";
import { type Command, printJson } from "../context";
import { usageError } from "../flags";
import { formatTable } from "../operator";
import { SPECS } from "../specs";

const SPEC = SPECS.sandbox;

/** `exposure sandbox up|status|down`: src/adapters/sandbox does the work, this prints it. */
export const command: Command<"sandbox"> = async ({ values, positionals }, ctx) => {
  const [action] = positionals;
  if (positionals.length > 1) throw usageError(SPEC, `one action only, not '${printableValue(positionals.join(" "))}'`);
  const io = { projectDir: ctx.projectDir, env: ctx.env, say: (l: string) => ctx.stderr(l), monitoring: !!values.monitoring, second: !!values.second };
  const rel = (p: string) => path.relative(process.cwd(), p) || ".";
  switch (action) {
    case "up": {
      const { urls, portal, folder, mode, prometheus, pulumi, envFile } = await sandboxUp(io).catch((err: Error) => {
        throw err instanceof UserError ? err : new UserError(`${err.message}\n(the sandbox is left as it is for inspection: exposure sandbox down removes it)`);
      });
      if (values.json) printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "SandboxUp", urls, portal, folder, mode, prometheus } satisfies SandboxUpDocument);
      else
        ctx.stdout(
          [
            mode === "kube-proxy"
              ? "URLS (answered by kube-proxy in the sandbox node's network namespace, through the pods' servers)"
              : "URLS (answered by the sandbox's own servers on the published ports: no network namespaces on this machine)",
            formatTable(["ENTRY", "URL"], Object.entries(urls)),
            "",
            `portal: ${portal}`,
            // The API, not the /alerts page: the Prometheus built from Go modules has no web UI assets (that page answers 500).
            ...(prometheus ? [`prometheus: ${prometheus}api/v1/alerts (the stack's alerts on the portal, as JSON: docs/monitoring.md)`] : []),
            `folder: ${rel(folder)} (pulumi ${pulumi.version} from ${pulumi.source})`,
            "",
            "next, in this shell:",
            ...nextCommands(rel(envFile)),
          ].join("\n"),
        );
      return EXIT.OK;
    }
    case "status": {
      const s = await sandboxStatus(io);
      if (values.json) printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "SandboxStatus", ...s } satisfies SandboxStatusDocument);
      else if (!s.processes.length && !s.rejected.length && !s.controlPlane && !s.outsideRecord)
        ctx.stdout(`no sandbox in ${rel(s.folder)} (start one with: npm run sandbox)`);
      else {
        const api = s.controlPlane?.apiServer;
        const processRow = (p: { role: string; pid: number; running: boolean }) => [`${p.role} (pid ${p.pid})`, p.running ? "running" : "STOPPED"];
        const apiRow = (a: NonNullable<typeof api>) => [`API server ${a.url}`, `${a.answers ? "answers" : "NO ANSWER"} (${a.detail})`];
        const rows = [
          ...(s.controlPlane?.processes ?? []).map(processRow),
          api ? apiRow(api) : ["control plane", "NOT FOUND (no .sandbox/cluster)"],
          ...(s.second ? [...s.second.processes.map((p) => processRow({ ...p, role: `${p.role} (second)` })), apiRow(s.second.apiServer)] : []),
          ...s.processes.map(processRow),
          ...(s.dataPath?.processes.filter((p) => !p.running).map(processRow) ?? []),
          ...s.urls.map((u) => [`${u.entry} ${u.url}`, u.answers ? "answers" : "NO ANSWER"]),
          ...(s.portal ? [[`portal ${s.portal.url}`, s.portal.answers ? "answers" : "NO ANSWER"]] : []),
          ...s.rejected.map((why) => [`sandbox.json ${why}`, "IGNORED"]),
        ];
        ctx.stdout(
          [
            formatTable(["WHAT", "STATE"], rows),
            ...s.problems.map((p) => `${p.entry}: ${p.problem}\n  fix: ${p.remedy}`),
            s.up
              ? "sandbox up"
              : s.outsideRecord
                ? `sandbox folder gone, its processes still recorded in ${s.outsideRecord}: exposure sandbox down stops them`
                : api?.answers === false || s.second?.apiServer.answers === false
                  ? "sandbox incomplete: the API server does not answer (see .sandbox/cluster/logs/kube-apiserver.log); npm run sandbox restarts a stopped control plane in place (same URLs and ports), else starts the sandbox anew"
                  : s.problems.length && [...s.processes, ...(s.controlPlane?.processes ?? []), ...(s.dataPath?.processes ?? [])].every((p) => p.running)
                    ? `sandbox running, ${s.problems.length} ${s.problems.length === 1 ? "entry needs" : "entries need"} the fix above`
                    : "sandbox incomplete: npm run sandbox starts it anew (it removes this one first)",
          ].join("\n"),
        );
      }
      return s.up ? EXIT.OK : EXIT.ERROR;
    }
    case "down": {
      const d = await sandboxDown(io);
      if (values.json) printJson(ctx, { apiVersion: JSON_API_VERSION, kind: "SandboxDown", ...d } satisfies SandboxDownDocument);
      else {
        ctx.stdout(d.removed ? `stopped: ${d.stopped.join(", ") || "nothing was running"}; removed ${rel(d.folder)}` : `no sandbox in ${rel(d.folder)}`);
        const n = d.otherStacks.length;
        const what = `the state of stack${n === 1 ? "" : "s"} ${d.otherStacks.join(", ")}`;
        if (n) ctx.stdout(`also removed with the sandbox's backend (${rel(d.folder)}/state): ${what}`);
        for (const k of d.kept) ctx.stdout(`left in place: ${k}`);
        // Never signalled: a record that does not prove the process is ours (check by hand with ps).
        for (const why of d.rejected) ctx.stderr(`exposure sandbox down: ignored sandbox.json ${why}: nothing signalled for it`);
      }
      return EXIT.OK;
    }
    default:
      throw usageError(SPEC, action ? `unknown sandbox action '${printableValue(action)}': up, status or down` : "name the action: up, status or down");
  }
};

/** The commands `sandbox up` suggests next, each with why, the comments in one column whatever the folder's name. */
export function nextCommands(envFile: string): string[] {
  const lines: [string, string][] = [
    [`. ${envFile}`, "kubeconfig, state, passphrase, pulumi on PATH"],
    [`npx exposure status --stack ${SANDBOX_STACK}`, "MATCH per entry"],
    [`npx exposure probe --stack ${SANDBOX_STACK}`, "every URL answers"],
    [`npx exposure access --stack ${SANDBOX_STACK} --no-dotenv`, "URLs and credentials on one screen"],
    [`pulumi preview --stack ${SANDBOX_STACK}`, "no changes"],
    ["npx exposure sandbox down", "stop everything, remove the folder"],
  ];
  return lines.map(([command, why]) => `  ${command.padEnd(Math.max(...lines.map(([c]) => c.length)) + 3)}# ${why}`);
}
