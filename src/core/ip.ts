// IP literals, checked without `node:net` so that the pure core stays free of I/O modules; IPv6 by the WHATWG URL parser, once the text holds only
// what an address may (so nothing around it parses too). Only a plain address goes into a URL: no zone (`%eth0`), no surrounding text.
const IPV4_OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
const isIPv6 = (text: string) => text.length <= 45 && /^[0-9a-fA-F:.]+$/.test(text) && URL.canParse(`http://[${text}]/`);

/** 4 or 6 for a plain IP literal, 0 for anything else (names, zones, ports, spaces). */
export function ipVersion(text: string): 0 | 4 | 6 {
  if (IPV4.test(text)) return 4;
  return isIPv6(text) ? 6 : 0;
}

/** The host part of a URL for an IP literal: IPv6 bracketed. Undefined when it is not an IP. */
export function urlHost(address: string): string | undefined {
  const version = ipVersion(address);
  if (version === 4) return address;
  if (version === 6) return `[${address}]`;
  return undefined;
}
