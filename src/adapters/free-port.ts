// A port the kernel just gave out on 127.0.0.1 (or `port`, when free) for a server started next (control plane, SSH forwards, tests' servers). Another
// process may take it in between; callers that cannot retry say so.
import * as net from "node:net";

export function freeLoopbackPort(port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(port, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
