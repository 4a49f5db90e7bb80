// An API server that accepts connections and never answers: each read fails after the timeout
// with one message, and the request is aborted (its socket closed), so that no pending request
// keeps the process alive (the Pulumi program used to hang there after its error).
import * as net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LiveClusterReader } from "../src/adapters/kube-live";
import { fakeKubeconfig } from "./support/fake-api";

let server: net.Server;
let port: number;
const open = new Set<net.Socket>();
/** Resolved with the first connection the server accepts. */
let firstConnection: (socket: net.Socket) => void;
const accepted = new Promise<net.Socket>((resolve) => {
  firstConnection = resolve;
});

beforeAll(async () => {
  server = net.createServer((socket) => {
    firstConnection(socket);
    open.add(socket);
    socket.resume(); // read (and drop) the TLS hello, so that a close by the client is seen
    socket.on("close", () => open.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  port = (server.address() as net.AddressInfo).port;
});

afterAll(async () => {
  for (const s of open) s.destroy();
  await new Promise((r) => server.close(r));
});

const kubeconfig = () => fakeKubeconfig(`https://127.0.0.1:${port}`, { context: "silent" });

describe("a cluster that never answers", () => {
  it("fails each read after the timeout with one message, and closes the connection it opened", async () => {
    const reader = await LiveClusterReader.connect({ kubeconfig: kubeconfig(), timeoutMs: 300 });
    await expect(reader.listServices()).rejects.toThrow(`cluster unreachable: context silent (https://127.0.0.1:${port}) did not answer services within 0.3s`);
    // The connection the read opened is closed by the client: waited for as an event (its close), not for a while.
    const socket = await accepted;
    if (!socket.closed) await new Promise((resolve) => socket.once("close", resolve));
    expect(open.size).toBe(0);
  });
});
