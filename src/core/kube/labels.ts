// Label keys and values exactly as the API server validates them: what the contract's podSelector may hold (a value it
// would never store cannot select a pod, nor be a CEL string literal in the admission policy).

const NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const NAME_MAX = 63;
const PREFIX_MAX = 253;

const shown = (s: string) => JSON.stringify(s.length > 70 ? `${s.slice(0, 70)}...` : s);
const NAME_RULE = `at most ${NAME_MAX} characters: letters, digits, '-', '_' and '.', starting and ending with a letter or digit`;

/** Why `key` is not a label key (`[prefix/]name`, prefix a DNS subdomain), or undefined. */
export function labelKeyProblem(key: string): string | undefined {
  const slash = key.indexOf("/");
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  // (An empty prefix or name fails its pattern.)
  if (prefix !== undefined && (prefix.length > PREFIX_MAX || !DNS_SUBDOMAIN.test(prefix))) {
    return `label key ${shown(key)}: its prefix must be a DNS subdomain of at most ${PREFIX_MAX} characters (lowercase letters, digits, '-' and '.')`;
  }
  if (name.length > NAME_MAX || !NAME.test(name)) return `label key ${shown(key)}: its name must be ${NAME_RULE}`;
  return undefined;
}

/** Why `value` is not a label value (empty, or a name of at most 63 characters), or undefined. */
export function labelValueProblem(value: string): string | undefined {
  if (value !== "" && (value.length > NAME_MAX || !NAME.test(value))) return `label value ${shown(value)} must be empty or ${NAME_RULE}`;
  return undefined;
}
