// zod's English messages for the functional API ("zod/mini", what the schemas use): the
// chainable API installs them itself, and loads every other locale with them. The small API
// bundles to about 20 KB against 750 KB, which was the largest part of a command's start-up
// (docs/benchmarks.md, CLI start-up). Imported for its effect by each module that defines schemas.
import * as z from "zod/mini";
import { en } from "zod/v4/locales";

z.config(en());
