import * as net from "node:net";

/**
 * Sends raw bytes to a loopback server and resolves with everything it answers until the
 * connection closes; after `closeAfterMs` the client ends its side (`end`) or cuts it (`destroy`).
 * A socket error rejects, or (`onError: "resolve"`) resolves with what was answered so far.
 */
export function rawRequest(
  port: number,
  bytes: string,
  opts: { closeAfterMs: number; close: "end" | "destroy"; onError: "reject" | "resolve" },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (d) => {
      answer += d;
    });
    socket.on("error", (err) => (opts.onError === "reject" ? reject(err) : resolve(answer)));
    socket.on("close", () => resolve(answer));
    socket.write(bytes);
    setTimeout(() => (opts.close === "end" ? socket.end() : socket.destroy()), opts.closeAfterMs).unref();
  });
}
