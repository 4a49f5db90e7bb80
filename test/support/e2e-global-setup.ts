// vitest globalSetup of the e2e suite: this run's record and watchdog (test/support/run-record.ts).
// No teardown of its own: vitest runs it while its test workers (which carry the run's id) still
// live; the watchdog stops what is left once vitest has ended, however it ends.
import { startRun } from "./run-record";

export default async function setup(): Promise<void> {
  await startRun();
}
