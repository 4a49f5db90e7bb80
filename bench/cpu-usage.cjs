// Preloaded (`node --require bench/cpu-usage.cjs ...`) by the start-up benchmark: when the
// process exits, writes its own CPU time and the packages it loaded to $BENCH_CPU_FILE.
// The floor (`node -e 0`) is measured with the same preload, so its cost cancels out.
"use strict";
const fs = require("node:fs");

process.on("exit", () => {
  const file = process.env.BENCH_CPU_FILE;
  if (!file) return;
  const usage = process.cpuUsage();
  const packages = new Set();
  for (const key of Object.keys(require.cache)) {
    const m = /node_modules[\\/]((?:@[^\\/]+[\\/])?[^\\/]+)/.exec(key.slice(key.lastIndexOf("node_modules")));
    if (m) packages.add(m[1].replace(/\\/g, "/"));
  }
  fs.writeFileSync(
    file,
    JSON.stringify({ cpuMs: (usage.user + usage.system) / 1000, modules: Object.keys(require.cache).length, packages: [...packages].sort() }),
  );
});
