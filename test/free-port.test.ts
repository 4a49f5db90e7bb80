import * as net from "node:net";
import { describe, expect, it } from "vitest";
import { freeLoopbackPort } from "../src/adapters/free-port";

describe("freeLoopbackPort", () => {
  it("gives a port a server can then listen on at 127.0.0.1", async () => {
    const port = await freeLoopbackPort();
    expect(port).toBeGreaterThan(0);
    const s = net.createServer();
    await new Promise<void>((resolve, reject) => {
      s.once("error", reject);
      s.listen(port, "127.0.0.1", resolve);
    });
    expect((s.address() as net.AddressInfo).port).toBe(port);
    await new Promise((r) => s.close(r));
  });
});
