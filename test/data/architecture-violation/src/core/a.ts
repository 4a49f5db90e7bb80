// Fixture of test/architecture.test.ts: half of an import cycle (a -> b -> a).
import { two } from "./b";

export const one = (): number => two() - 1;
