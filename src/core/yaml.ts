// The one way this project parses YAML that came from outside (contract, cluster snapshot, stack file; a kubeconfig is checked with it before client-node reads
// it): nesting depth and the number of values are bounded while the text is tokenised, before anything is built from it. The parser builds nodes recursively
// and holds about 1 KB per value, so 6 MiB of `[` or of `1,` would otherwise grow the process past its heap and abort it.
import { Composer, CST, type Document, isAlias, isCollection, Lexer, LineCounter, Parser, visit, YAMLParseError } from "yaml";

/** Deepest nesting read (collections inside collections); a Kubernetes object nests about 15 deep. */
export const YAML_MAX_DEPTH = 100;

/** Values a contract or a stack file may hold (a contract of 1000 entries holds about 20,000). */
export const SMALL_YAML_VALUES = 100_000;
/** Values a cluster snapshot may hold: about 9 MiB of `kubectl get pods -o yaml`; parsing the worst text within it (`[1,1,...]`) peaks near 1 GiB. */
export const SNAPSHOT_YAML_VALUES = 1_000_000;

/** A text refused before it was parsed: where, and why (one line). */
type YamlRefusal = { offset: number; message: string };

type BoundedYaml = { docs: Document.Parsed[]; lineCounter: LineCounter; refused?: undefined } | { refused: YamlRefusal; lineCounter: LineCounter };

class Refused extends Error {
  constructor(readonly refusal: YamlRefusal) {
    super(refusal.message);
  }
}

/** The tokens counted as values: scalars, aliases, collections, key/value and item indicators. */
const SCALARS = ["scalar", "single-quoted-scalar", "double-quoted-scalar", "block-scalar-header", "alias"];
const COUNTED = new Set<string | null>([...SCALARS, "flow-map-start", "flow-seq-start", "seq-item-ind", "map-value-ind", "explicit-key-ind"]);

// The first limit the text passes (values, flow nesting), seen by the lexer alone: it keeps nothing, where the parser keeps every token of a document.
// Block nesting needs the parser: boundedTokens checks it.
function lexicalRefusal(text: string, maxValues: number): YamlRefusal | undefined {
  let values = 0;
  let flowDepth = 0;
  let offset = 0;
  for (const lexeme of new Lexer().lex(text, false)) {
    const type = CST.tokenType(lexeme);
    if (COUNTED.has(type) && ++values > maxValues) return { offset, message: `more than ${maxValues} values: too large to read` };
    if (type === "flow-map-start" || type === "flow-seq-start") {
      if (++flowDepth > YAML_MAX_DEPTH) return { offset, message: TOO_DEEP };
    } else if (type === "flow-map-end" || type === "flow-seq-end") flowDepth = Math.max(0, flowDepth - 1);
    // Markers the lexer adds (document start, flow end, a scalar follows) are not in the text.
    if (lexeme !== CST.DOCUMENT && lexeme !== CST.FLOW_END && lexeme !== CST.SCALAR) offset += lexeme.length;
  }
  return undefined;
}

// Whether `text` may exceed a bound of lexicalRefusal (two values a character at most, a `[` or `{` a flow level): a short text is not lexed twice (a cold
// lexer run is a tenth of `exposure check`'s CPU).
function mayExceedBounds(text: string, maxValues: number): boolean {
  if (2 * text.length > maxValues) return true;
  let openers = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 0x5b || c === 0x7b) && ++openers > YAML_MAX_DEPTH) return true;
  }
  return false;
}

const TOO_DEEP = `nested more than ${YAML_MAX_DEPTH} levels deep: flatten the document`;

/** The parser's tokens for `text`, refusing (by throwing Refused) nesting deeper than YAML_MAX_DEPTH. */
function* boundedTokens(text: string, parser: Parser) {
  for (const lexeme of new Lexer().lex(text, false)) {
    yield* parser.next(lexeme);
    // The parser's stack is the nesting being built: the document, each open collection, a scalar.
    if (parser.stack.length > YAML_MAX_DEPTH + 2) throw new Refused({ offset: parser.offset, message: TOO_DEEP });
  }
  yield* parser.end();
}

// The same bounds for JSON from outside (`--outputs`: depth, values counted as collections, items and keys), in one pass before JSON.parse builds anything
// (16 MiB of nested arrays took 0.9 GB and 8 s).
export function jsonRefusal(text: string, maxValues: number): YamlRefusal | undefined {
  let depth = 0;
  let values = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      while (++i < text.length && text[i] !== '"') if (text[i] === "\\") i++;
    } else if (c === "[" || c === "{") {
      if (++depth > YAML_MAX_DEPTH) return { offset: i, message: `nested more than ${YAML_MAX_DEPTH} levels deep` };
      if (++values > maxValues) return { offset: i, message: `more than ${maxValues} values` };
    } else if (c === "]" || c === "}") depth--;
    else if ((c === "," || c === ":") && ++values > maxValues) return { offset: i, message: `more than ${maxValues} values` };
  }
  return undefined;
}

// Every document of `text` (`single`: exactly one, as `parseDocument` gives) with yaml's own options, or a refusal past YAML_MAX_DEPTH or
// `bounds.maxValues`. Syntax errors stay in each document's `errors`.
export function parseYamlBounded(text: string, bounds: { maxValues: number }, opts: { single?: boolean } = {}): BoundedYaml {
  const lineCounter = lineCounterOf(text);
  const docs: Document.Parsed[] = [];
  const refused = mayExceedBounds(text, bounds.maxValues) ? lexicalRefusal(text, bounds.maxValues) : undefined;
  if (refused) return { refused, lineCounter };
  try {
    // Warnings off: the one yaml prints (a collection key stringified) cannot arise, such keys are errors.
    for (const doc of new Composer({ logLevel: "error" }).compose(boundedTokens(text, new Parser()), opts.single === true, text.length)) {
      if (opts.single && docs.length === 1) {
        // The same error parseDocument reports for a second document.
        const message = "Source contains multiple documents; please use YAML.parseAllDocuments()";
        docs[0]?.errors.push(new YAMLParseError([doc.range[0], doc.range[1]], "MULTIPLE_DOCS", message));
        break;
      }
      docs.push(refuseComplexKeys(doc));
    }
  } catch (err) {
    if (err instanceof Refused) return { refused: err.refusal, lineCounter };
    throw err;
  }
  return { docs, lineCounter };
}

/** A collection or alias key names nothing a contract, a snapshot or a stack file holds: an error at it. */
function refuseComplexKeys(doc: Document.Parsed): Document.Parsed {
  const refuse = (range: readonly number[] = [0, 0]) =>
    doc.errors.push(new YAMLParseError([range[0] ?? 0, range[1] ?? 0], "NON_STRING_KEY", "a mapping key must be a plain name, not a collection or an alias"));
  visit(doc, { Pair: (_, { key }) => void ((isCollection(key) || isAlias(key)) && refuse(key.range ?? undefined)) });
  return doc;
}

/** `file:line:col` of `offset` (default: the start) in a text of these line starts. */
export function placeIn(lines: LineCounter, file: string, offset = 0): string {
  const { line, col } = lines.linePos(offset);
  return `${file}:${line}:${col}`;
}

/** Line starts of `text`, for positions (also of a refusal, found before the parser runs). */
export function lineCounterOf(text: string): LineCounter {
  const lines = new LineCounter();
  lines.addNewLine(0);
  for (let nl = text.indexOf("\n"); nl !== -1; nl = text.indexOf("\n", nl + 1)) lines.addNewLine(nl + 1);
  return lines;
}
