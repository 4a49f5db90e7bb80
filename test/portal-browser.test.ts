// The portal page in headless Chromium (Debian's /usr/bin/chromium driven by playwright-core;
// no browser is downloaded). JavaScript is off for the whole session: the page must work
// without it. The "UIs" are small HTTP servers on 127.0.0.2 whose ports stand for the
// observed nodePorts, so clicking a link really lands on the UI behind it.
import * as fs from "node:fs";
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { type BrowserContext, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseContract } from "../src/core/contract/parse";
import { type RunningPortal, startPortal } from "../src/portal/server";
import { GRAFANA_DRIFT_REASON, MemoryCluster, NODE_IP, PORTAL_TEST_CONTRACT, recordedCluster, unreachable } from "./support/portal-fixtures";

const CHROMIUM = "/usr/bin/chromium";
const HAVE_CHROMIUM = fs.existsSync(CHROMIUM);
const OUTPUT_DIR = path.resolve(__dirname, "..", "test-output");
export const SCREENSHOT = path.join(OUTPUT_DIR, "portal.png");
const SCREENSHOT_PHONE = path.join(OUTPUT_DIR, "portal-phone.png");
/** The screenshot docs/portal.md embeds: refreshed when UPDATE_DOCS_SCREENSHOTS=1 (ports and ages change at every run). */
const DOCS_DIR = path.resolve(__dirname, "..", "docs");
const UPDATE_DOCS = process.env.UPDATE_DOCS_SCREENSHOTS === "1";

/** The test contract with groups: grafana and postgres under "Observability" and "Data", the rest ungrouped. */
const groupedContract = () =>
  parseContract(
    PORTAL_TEST_CONTRACT.replace("    description: Grafana\n", "    description: Grafana\n    group: Observability\n")
      .replace("  - name: argocd\n", "  - name: argocd\n    group: Delivery\n")
      .replace("    description: Platform PostgreSQL\n", "    description: Platform PostgreSQL\n    group: Data\n"),
    "portal-browser.yaml",
  );

// Chromium must not phone home (updates, sync, QUIC probes): only loopback is ever contacted.
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

if (!HAVE_CHROMIUM) {
  process.stderr.write(
    `\n*** SKIPPED: portal browser test: ${CHROMIUM} is not installed, so the page was NOT checked in a browser and no screenshot was made.\n` +
      "*** Install it with: apt-get install -y chromium chromium-driver   (the CI script does)\n\n",
  );
}

/** A stand-in for a UI behind a nodePort, on a 127.0.0.x address like the fake node's; `status` 500 for a broken UI. */
function fakeUi(name: string, status = 200): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((_req, res) => {
    res.writeHead(status, { "Content-Type": "text/html; charset=utf-8" });
    res.end(`<!doctype html><title>${name}</title><h1 id="ui">fake ${name} UI</h1>`);
  });
  return new Promise((resolve) => server.listen(0, NODE_IP, () => resolve({ server, port: (server.address() as AddressInfo).port })));
}

describe.skipIf(!HAVE_CHROMIUM)(`portal page in headless Chromium (${HAVE_CHROMIUM ? CHROMIUM : `SKIPPED: ${CHROMIUM} is not installed`})`, () => {
  let uis: { server: http.Server; port: number }[] = [];
  let argocd: { server: http.Server; port: number };
  let grafana: { server: http.Server; port: number };
  let cluster: MemoryCluster;
  let portal: RunningPortal;
  let userDataDir: string;
  let browser: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    argocd = await fakeUi("argocd");
    // Wired but failing: grafana answers 500, and the page must say so next to its verdict.
    grafana = await fakeUi("grafana", 500);
    uis = [argocd, grafana];
    cluster = new MemoryCluster(recordedCluster({ argocd: argocd.port, grafana: grafana.port }));
    // Real probes of the stand-ins (loopback); every load reads the recorded cluster again.
    portal = await startPortal({ contract: groupedContract(), cluster, stack: "bench", readIntervalMs: 0 }, { host: "127.0.0.1", port: 0 });
    // A fresh profile every run (playwright passes it as --user-data-dir).
    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "portal-chromium-"));
    browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      javaScriptEnabled: false,
      viewport: { width: 1280, height: 720 },
      timeout: 30_000,
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    fs.mkdirSync(OUTPUT_DIR, { recursive: true });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await portal?.close();
    await Promise.all(uis.map((u) => new Promise((r) => u.server.close(r))));
    if (userDataDir) fs.rmSync(userDataDir, { recursive: true, force: true });
  });

  it("links every published UI to its observed URL and shows the DRIFT with its reason", async () => {
    const res = await page.goto(portal.url);
    expect(res?.status()).toBe(200);
    expect(await page.title()).toBe("Platform UIs · bench");

    const links = page.locator("tbody td.url a");
    expect(await links.count()).toBe(2);
    expect(await page.locator("#entry-argocd td.url a").getAttribute("href")).toBe(`http://${NODE_IP}:${argocd.port}`);
    expect(await page.locator("#entry-grafana td.url a").getAttribute("href")).toBe(`http://${NODE_IP}:${grafana.port}`);
    expect(await page.locator("#entry-gitea td.url a").count()).toBe(0);
    expect(await page.locator("#entry-postgres td.url a").count()).toBe(0);

    const drift = page.locator("#entry-grafana .v-DRIFT");
    expect(await drift.isVisible()).toBe(true);
    expect(await drift.textContent()).toBe("DRIFT");
    expect(await page.locator("#entry-grafana .reasons li").textContent()).toBe(GRAFANA_DRIFT_REASON);
    expect(await page.locator("#entry-argocd .v-MATCH").textContent()).toBe("MATCH");
    expect(await page.locator("#entry-gitea .v-ABSENT").textContent()).toBe("ABSENT");
    // Script-free page: the description's markup is text, not an element.
    expect(await page.locator("#entry-argocd script").count()).toBe(0);
    expect(await page.locator("#entry-argocd small").first().textContent()).toContain('<script>alert("x")</script>');

    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    process.stdout.write(`portal screenshot: ${SCREENSHOT}\n`);
    expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    if (UPDATE_DOCS) fs.copyFileSync(SCREENSHOT, path.join(DOCS_DIR, "portal.png"));
  });

  it("shows whether each UI answers next to its verdict: a wired but failing UI is visibly not OK", async () => {
    await page.goto(portal.url);
    expect(await page.locator("thead th").allTextContents()).toEqual(["Name", "Namespace", "URL", "Ready", "Verdict", "Answers"]);
    const ok = page.locator("#entry-argocd td.reach .badge");
    expect(await ok.textContent()).toBe("OK 200");
    const failing = page.locator("#entry-grafana td.reach .badge");
    expect(await failing.isVisible()).toBe(true);
    expect(await failing.textContent()).toBe("NOT OK 500");
    // Red, not the green of OK: the colour tells it at a glance.
    const [okColor, badColor] = await Promise.all([
      ok.evaluate((e) => (globalThis as unknown as { getComputedStyle(x: unknown): { color: string } }).getComputedStyle(e).color),
      failing.evaluate((e) => (globalThis as unknown as { getComputedStyle(x: unknown): { color: string } }).getComputedStyle(e).color),
    ]);
    expect(okColor).not.toBe(badColor);
    expect(await page.locator("#entry-grafana td.reach small").textContent()).toMatch(/^expected 2xx\/3xx, got 500 · \d+ ms · checked (just now|\d+ s ago)$/);
    expect(await page.locator(".summary").textContent()).toContain("1 not answering");
    expect(await page.locator("#entry-gitea td.reach").textContent()).toBe("—");
    // The observation time in the viewer's terms, the exact time in the tooltip.
    expect(await page.locator(".meta time").first().textContent()).toMatch(/^(just now|\d+ s ago)$/);
  });

  it("groups the entries by the contract's group, the ungrouped ones last, and links each row to its JSON", async () => {
    await page.goto(portal.url);
    expect(await page.locator("tr.group th").allTextContents()).toEqual(["Delivery", "Observability", "Data", "Other"]);
    expect(await page.locator("tbody tr[data-entry]").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-entry")))).toEqual([
      "argocd",
      "grafana",
      "postgres",
      "gitea",
    ]);
    await page.locator("#entry-grafana a.json").click();
    await page.waitForURL(new URL("/api/entries/grafana", portal.url).href);
    const body = JSON.parse((await page.locator("body").textContent()) ?? "{}") as { entry: { name: string; reachability: { ok: boolean; status: number } } };
    expect(body.entry).toMatchObject({ name: "grafana", reachability: { ok: false, status: 500 } });
  });

  it("refreshes itself on ?refresh=N without any script", async () => {
    const res = await page.goto(new URL("/?refresh=30", portal.url).href);
    expect(res?.headers()["content-security-policy"]).toContain("default-src 'none'");
    expect(await page.locator('meta[http-equiv="refresh"]').getAttribute("content")).toBe("30");
    expect(await page.locator("script").count()).toBe(0);
    expect(await page.locator(".foot").textContent()).toContain("Reloads every 30 s");
  });

  it("clicking a link opens the UI behind the observed nodePort", async () => {
    await page.goto(portal.url);
    await page.locator("#entry-argocd td.url a").click();
    await page.waitForURL(`http://${NODE_IP}:${argocd.port}/`);
    expect(await page.locator("#ui").textContent()).toBe("fake argocd UI");
  });

  it("is readable on a phone: no horizontal scrolling, one card per entry", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(portal.url);
      // Every row fits the viewport (rows turn into cards below 40rem).
      for (const entry of ["argocd", "grafana", "gitea", "postgres"]) {
        expect(await page.locator(`#entry-${entry} td.reach`).isVisible(), entry).toBe(true);
        const box = await page.locator(`#entry-${entry}`).boundingBox();
        expect(box, entry).not.toBeNull();
        expect((box?.x ?? 0) + (box?.width ?? 0), entry).toBeLessThanOrEqual(390);
      }
      expect(await page.locator("thead").isVisible()).toBe(false);
      expect(await page.locator("#entry-grafana .badge").first().isVisible()).toBe(true);
      expect(await page.locator("tr.group th").first().isVisible()).toBe(true);
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(390);
      await page.screenshot({ path: SCREENSHOT_PHONE, fullPage: true });
      if (UPDATE_DOCS) fs.copyFileSync(SCREENSHOT_PHONE, path.join(DOCS_DIR, "portal-phone.png"));
      process.stdout.write(`portal phone screenshot: ${SCREENSHOT_PHONE}\n`);
    } finally {
      await page.setViewportSize({ width: 1280, height: 720 });
    }
  });

  it("wraps a URL between host and port on a narrow screen, never inside the port number (issue 27 #5)", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      await page.goto(portal.url);
      const link = page.locator("#entry-argocd td.url a");
      // The card's width beside the URL, and the URL's own widths, at this viewport.
      const widths = await link.evaluate((a) => {
        const el = a as unknown as {
          getBoundingClientRect(): { width: number };
          parentElement: { getBoundingClientRect(): { width: number } };
          querySelector(s: string): { getBoundingClientRect(): { width: number } } | null;
        };
        return { cell: el.parentElement.getBoundingClientRect().width, host: el.querySelector(".host")?.getBoundingClientRect().width ?? 0 };
      });
      const full = await page.evaluate<number, string>((text) => {
        const d = globalThis as unknown as {
          document: {
            createElement(t: string): { textContent: string; style: Record<string, string>; getBoundingClientRect(): { width: number }; remove(): void };
            querySelector(s: string): { appendChild(x: unknown): void };
          };
        };
        const probe = d.document.createElement("span");
        probe.textContent = text;
        probe.style.whiteSpace = "nowrap";
        d.document.querySelector("#entry-argocd td.url div").appendChild(probe);
        const w = probe.getBoundingClientRect().width;
        probe.remove();
        return w;
      }, `http://${NODE_IP}:${argocd.port}`);
      // A viewport where the whole URL does not fit beside its label but the host does: it must wrap.
      const width = Math.floor(390 - widths.cell + (widths.host + full) / 2);
      await page.setViewportSize({ width, height: 844 });
      await page.goto(portal.url);
      const lines = await link.evaluate((a) => {
        // The rendered lines of the link's text: characters grouped by the top of their box.
        const d = globalThis as unknown as {
          document: { createRange(): { setStart(n: unknown, o: number): void; setEnd(n: unknown, o: number): void; getBoundingClientRect(): { top: number } } };
        };
        const out = new Map<number, string>();
        const walk = (n: { nodeType: number; textContent: string | null; childNodes: ArrayLike<unknown> }) => {
          if (n.nodeType === 3) {
            const text = n.textContent ?? "";
            for (let i = 0; i < text.length; i++) {
              const r = d.document.createRange();
              r.setStart(n, i);
              r.setEnd(n, i + 1);
              const top = Math.round(r.getBoundingClientRect().top);
              out.set(top, (out.get(top) ?? "") + text[i]);
            }
          } else for (const c of Array.from(n.childNodes)) walk(c as typeof n);
        };
        walk(a as unknown as { nodeType: number; textContent: string | null; childNodes: ArrayLike<unknown> });
        return [...out.entries()].sort((x, y) => x[0] - y[0]).map(([, t]) => t);
      });
      expect(lines).toEqual([`http://${NODE_IP}`, `:${argocd.port}`]);
      expect(await page.evaluate<number>("document.documentElement.scrollWidth")).toBeLessThanOrEqual(width);
    } finally {
      await page.setViewportSize({ width: 1280, height: 720 });
    }
  });

  it("shows a cluster error as an error (HTTP 503), not as an empty table", async () => {
    cluster.failure = unreachable();
    try {
      const res = await page.goto(portal.url);
      expect(res?.status()).toBe(503);
      expect(await page.locator("[role=alert] h2").textContent()).toBe("Cannot read the cluster");
      expect(await page.locator("table").count()).toBe(0);
      await page.screenshot({ path: path.join(OUTPUT_DIR, "portal-error.png") });
    } finally {
      cluster.failure = undefined;
    }
  });
});
