// The e2e runs' record folder (test/support/run-record.ts) is trusted only when it is this user's:
// a record another user planted in a shared /tmp must never make a run stop anything.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ensurePrivateDir, runsRoot, startRun } from "./support/run-record";

const made: string[] = [];
const scratch = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "run-record-test-"));
  made.push(dir);
  return dir;
};
afterEach(() => {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
const asRoot = process.getuid?.() === 0;
const NOBODY = 65534;

describe("run-record: the runs' folder", () => {
  it("is one folder per user by default, made 0700", () => {
    expect(runsRoot({})).toBe(path.join(os.tmpdir(), `ui-exposure-e2e-runs-${process.getuid?.()}`));
    const dir = path.join(scratch(), "runs");
    ensurePrivateDir(dir);
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    ensurePrivateDir(dir);
  });

  it("is refused when it is a link or open to others, saying what to do", () => {
    const base = scratch();
    const open = path.join(base, "open");
    fs.mkdirSync(open, { mode: 0o755 });
    fs.chmodSync(open, 0o755);
    expect(() => ensurePrivateDir(open)).toThrow(
      `e2e: ${open} is mode 755, open to others: nothing in it is trusted; remove it, or set UI_EXPOSURE_E2E_RUNS to a folder of your own`,
    );
    const link = path.join(base, "link");
    fs.mkdirSync(path.join(base, "target"), { mode: 0o700 });
    fs.symlinkSync(path.join(base, "target"), link);
    expect(() => ensurePrivateDir(link)).toThrow(`e2e: ${link} is a symbolic link: nothing in it is trusted`);
  });

  it.skipIf(!asRoot)("a folder another user made first, with a record planted in it, stops the run before anything is read or signalled", async () => {
    const planted = path.join(scratch(), "runs");
    fs.mkdirSync(planted, { mode: 0o700 });
    const record = path.join(planted, "0".repeat(32));
    fs.mkdirSync(record);
    // A "control plane" of the victim's, named by the planted record; its owner is long gone.
    fs.writeFileSync(path.join(record, "owner.json"), JSON.stringify({ pid: 999_999, startTime: "1" }));
    fs.writeFileSync(path.join(record, "control-planes"), "/nonexistent/victim-plane\n");
    for (const p of [planted, record, path.join(record, "owner.json"), path.join(record, "control-planes")]) fs.chownSync(p, NOBODY, NOBODY);
    const before = process.env.UI_EXPOSURE_E2E_RUNS;
    process.env.UI_EXPOSURE_E2E_RUNS = planted;
    try {
      await expect(startRun()).rejects.toThrow(`e2e: ${planted} is owned by uid ${NOBODY}, not 0: nothing in it is trusted`);
    } finally {
      if (before === undefined) delete process.env.UI_EXPOSURE_E2E_RUNS;
      else process.env.UI_EXPOSURE_E2E_RUNS = before;
    }
    // The planted record is still there: not reaped, not removed.
    expect(fs.existsSync(path.join(record, "control-planes"))).toBe(true);
  });
});
