// A sandbox command in miniature for test/sandbox.test.ts: takes the sandbox lock of a project
// `rounds` times, logging `+pid` on entry and `-pid` on exit; prints how often it held it.
import * as fs from "node:fs";
import { whileHoldingLock } from "../../src/adapters/sandbox/sandbox";

const [projectDir, records, log, rounds] = process.argv.slice(2) as [string, string, string, string];
(async () => {
  const io = { projectDir, env: { ...process.env, EXPOSURE_SANDBOX_RECORDS: records }, say: () => {} };
  let held = 0;
  for (let i = 0; i < Number(rounds); i++) {
    try {
      await whileHoldingLock(io, async () => {
        fs.appendFileSync(log, `+${process.pid}\n`);
        await new Promise((r) => setTimeout(r, 2));
        fs.appendFileSync(log, `-${process.pid}\n`);
      });
      held++;
    } catch (err) {
      if (!(err as Error).message.includes("nothing done")) throw err;
    }
  }
  process.stdout.write(`${held}\n`);
})();
