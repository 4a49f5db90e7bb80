// Probes NodePort URLs continuously, from the client namespace of the Cilium e2e: per URL, a new
// connection every 1000/RATE ms (each request on its own TCP connection), and one long-lived
// keep-alive connection asking every 200 ms. On SIGTERM it writes its figures to OUT as JSON:
// per URL the requests, the failures (with their first errors), the longest gap between two
// answers, and for the long-lived connection its requests and whether it broke.
//   node nodeport-probe.cjs OUT RATE URL...
"use strict";
const http = require("node:http");
const fs = require("node:fs");
const [out, rate, ...urls] = process.argv.slice(2);
const stats = Object.fromEntries(
  urls.map((u) => [
    u,
    { requests: 0, failures: 0, errors: [], longestGapMs: 0, lastOk: 0, long: { requests: 0, failures: 0, broken: false, localPort: undefined } },
  ]),
);
const fail = (s, what) => {
  s.failures++;
  if (s.errors.length < 5) s.errors.push(`${new Date().toISOString()} ${what}`);
};
function ok(s) {
  const now = Date.now();
  if (s.lastOk) s.longestGapMs = Math.max(s.longestGapMs, now - s.lastOk);
  s.lastOk = now;
}
const timers = [];
for (const url of urls) {
  const s = stats[url];
  timers.push(
    setInterval(() => {
      s.requests++;
      const req = http.get(url, { agent: false, headers: { connection: "close" }, timeout: 3000 }, (res) => {
        res.resume();
        res.on("end", () => (res.statusCode === 200 ? ok(s) : fail(s, `HTTP ${res.statusCode}`)));
      });
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", (e) => fail(s, e.message));
    }, 1000 / Number(rate)),
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const long = () => {
    s.long.requests++;
    const req = http.get(url, { agent, timeout: 3000 }, (res) => {
      const port = res.socket.localPort;
      if (s.long.localPort === undefined) {
        s.long.localPort = port;
        res.socket.on("close", () => {
          if (!stopping) s.long.broken = true;
        });
      } else if (port !== s.long.localPort) s.long.broken = true;
      res.resume();
      res.on("end", () => (res.statusCode === 200 ? ok(s) : fail(s.long, `HTTP ${res.statusCode}`)));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (e) => {
      s.long.failures++;
      s.long.broken = true;
      if (s.errors.length < 5) s.errors.push(`long-lived: ${e.message}`);
    });
  };
  timers.push(setInterval(long, 200));
}
let stopping = false;
process.on("SIGTERM", () => {
  stopping = true;
  for (const t of timers) clearInterval(t);
  // in-flight requests get their 3 s
  setTimeout(() => {
    for (const s of Object.values(stats)) delete s.lastOk;
    fs.writeFileSync(out, JSON.stringify(stats, null, 2));
    process.exit(0);
  }, 3500);
});
