/**
 * IP literals, checked without `node:net` so the pure core stays free of I/O modules.
 * Only a plain address goes into a URL: no IPv6 zone (`%eth0`), no surrounding text.
 */
const IPV4_OCTET = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]?\\d)";
const IPV4 = new RegExp(`^${IPV4_OCTET}(?:\\.${IPV4_OCTET}){3}$`);
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

function isIPv6(text: string): boolean {
  if (text.length > 45 || !/^[0-9a-fA-F:.]+$/.test(text)) return false;
  let head = text;
  let groupsFromV4 = 0;
  const lastColon = text.lastIndexOf(":");
  if (text.slice(lastColon + 1).includes(".")) {
    if (!IPV4.test(text.slice(lastColon + 1))) return false;
    head = `${text.slice(0, lastColon + 1)}0`;
    groupsFromV4 = 1; // the IPv4 tail fills two groups; "0" stands for one of them
  }
  const halves = head.split("::");
  if (halves.length > 2) return false;
  const groups = halves.map((h) => (h === "" ? [] : h.split(":")));
  if (groups.some((g) => g.some((part) => !HEX_GROUP.test(part)))) return false;
  const count = groups.reduce((n, g) => n + g.length, 0) + groupsFromV4;
  return halves.length === 2 ? count <= 7 : count === 8;
}

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
