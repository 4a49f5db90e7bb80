// The e2e run's watchdog (test/support/run-record.ts): started by the run in a session of its own,
// it waits for the run to end, then stops what the run left.
import { watch } from "./run-record";

const dir = process.argv[2] as string;
watch(dir).then((stopped) => {
  for (const s of stopped) console.log(`stopped ${s}`);
});
