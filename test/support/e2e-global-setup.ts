// vitest globalSetup of the e2e suite: this run's record and watchdog (test/support/run-record.ts).
import { reapRun, startRun } from "./run-record";

export default async function setup(): Promise<() => Promise<void>> {
  const dir = await startRun();
  return async () => {
    for (const stopped of await reapRun(dir)) console.warn(`e2e: stopped what the run left: ${stopped}`);
  };
}
