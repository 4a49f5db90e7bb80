// `tsx test/support/e2e-lanes-seconds.ts FILE...`: the seconds the e2e suite's longer lane takes
// with these files (test/support/e2e-lanes.ts), for .ci/run's budget guard, on the last line;
// before it, one `!!` line per file with no figure yet.
import { MEASURED_SECONDS, planLanes } from "./e2e-lanes";

const plan = planLanes(process.argv.slice(2));
for (const f of plan.unmeasured) console.log(`!! budget guard: no measured time for ${f} yet: counted as ${Math.max(...Object.values(MEASURED_SECONDS))}s`);
console.log(plan.seconds);
