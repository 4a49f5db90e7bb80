// The sandbox's pieces that need no cluster: stand-in answers, the pulumi version gate, and the
// rule that `down` stops only a process whose command line is still the one recorded.

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../cli/main";
import { isOurs, startDetached, stopRecorded } from "../src/adapters/sandbox/processes";
import { waitUntil } from "../src/adapters/sandbox/sandbox";
import { answer } from "../src/adapters/sandbox/stand-in-servers";
import { atLeast, MIN_PULUMI, parsePulumiVersion } from "../src/adapters/sandbox/toolchain";

describe("sandbox", () => {
  it("stand-in UIs answer the contract's probe path with the expected status, and a page elsewhere", () => {
    const grafana = { entry: "grafana", url: "http://127.0.0.11:31000", probePath: "/api/health", probeStatus: 200 };
    expect(answer(grafana, "/api/health?x=1")).toEqual({ status: 200, body: "grafana: ok\n" });
    expect(answer({ ...grafana, probeStatus: 401 }, "/api/health").status).toBe(401);
    const page = answer(grafana, "/");
    expect(page.status).toBe(200);
    expect(page.body).toContain("<title>grafana (sandbox stand-in)</title>");
  });

  it("uses a pulumi on PATH only from 3.248 on", () => {
    expect(parsePulumiVersion("v3.250.1\n")).toEqual([3, 250, 1]);
    expect(parsePulumiVersion("unknown")).toBeUndefined();
    expect(atLeast([3, 248, 0], MIN_PULUMI)).toBe(true);
    expect(atLeast([3, 247, 9], MIN_PULUMI)).toBe(false);
    expect(atLeast([4, 0, 0], MIN_PULUMI)).toBe(true);
  });

  it("a process that dies while starting is said at once with its log's last line, not after the timeout (found by an outside tester)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-test-"));
    try {
      const logFile = path.join(dir, "stand-ins.log");
      const started = startDetached(
        "stand-in servers",
        process.execPath,
        ["-e", "console.error(\"Error: Cannot find module '/x/stand-in-servers.js'\"); process.exit(1)"],
        {
          cwd: dir,
          env: process.env,
          logFile,
        },
      );
      const t0 = Date.now();
      await expect(waitUntil("the stand-in servers", async () => false, 30_000, { process: started, logFile })).rejects.toThrow(
        /^stand-in servers exited while starting: Error: Cannot find module '\/x\/stand-in-servers\.js'; see .*stand-ins\.log$/,
      );
      expect(Date.now() - t0).toBeLessThan(10_000);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stops a recorded process, and never one whose command line differs from the record", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-test-"));
    const started = startDetached("sleeper", process.execPath, ["-e", "setTimeout(() => {}, 60000)", dir], {
      cwd: dir,
      env: process.env,
      logFile: path.join(dir, "log"),
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(isOurs(started)).toBe(true);
    // Same pid, another command line (a recycled pid): left alone.
    expect(await stopRecorded([{ ...started, cmdline: `${started.cmdline}\0other` }])).toEqual([]);
    expect(isOurs(started)).toBe(true);
    expect(await stopRecorded([started])).toEqual([`sleeper (${started.pid})`]);
    expect(isOurs(started)).toBe(false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe("exposure sandbox (no sandbox running)", () => {
  const run = async (argv: string[]) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "sandbox-cli-"));
    fs.writeFileSync(path.join(dir, "Pulumi.yaml"), "name: ui-exposure\n");
    const out: string[] = [];
    const err: string[] = [];
    const code = await main(argv, { projectDir: dir, stdout: (t) => out.push(t), stderr: (t) => err.push(t), env: {} });
    fs.rmSync(dir, { recursive: true, force: true });
    return { code, out, err };
  };

  it("refuses a missing or unknown action with the usage (exit 2)", async () => {
    expect(await run(["sandbox"])).toMatchObject({
      code: 2,
      err: [
        "exposure sandbox: name the action: up, status or down\nusage: exposure sandbox up|status|down [--json]\n(`exposure sandbox --help` describes every flag)",
      ],
    });
    expect((await run(["sandbox", "start"])).code).toBe(2);
  });

  it("status says there is none (exit 1); down has nothing to stop (exit 0)", async () => {
    const status = await run(["sandbox", "status"]);
    expect(status.code).toBe(1);
    expect(status.out[0]).toMatch(/^no sandbox in .*\.sandbox \(start one with: npm run sandbox\)$/);
    const down = await run(["sandbox", "down"]);
    expect(down.code).toBe(0);
    expect(down.out[0]).toMatch(/^no sandbox in /);
  });
});
