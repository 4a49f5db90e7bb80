// zod's English messages for "zod/mini" (20 KB bundled, against 750 KB for the chainable API and its locales: docs/benchmarks.md, CLI start-up).
// Imported for its effect by each module that defines schemas.
import * as z from "zod/mini";
import { en } from "zod/v4/locales";

z.config(en());
