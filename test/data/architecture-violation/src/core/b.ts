// Fixture of test/architecture.test.ts: the other half of the cycle.
import { one } from "./a";

export const two = (): number => (one.length === 0 ? 2 : 0);
