import { gunzipSync } from "node:zlib";
import type { Inflate } from "../core/cilium/release";

/** gzip decompression that stops at `maxBytes` of output (zlib's maxOutputLength) and says why it failed in one line. */
export const gunzipBounded: Inflate = (gzip, maxBytes) => {
  try {
    return gunzipSync(gzip, { maxOutputLength: maxBytes });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ERR_BUFFER_TOO_LARGE") throw new Error(`larger than ${maxBytes / 2 ** 20} MiB once decompressed: refused`);
    throw new Error(`not valid gzip (${code ?? "corrupt data"})`);
  }
};
