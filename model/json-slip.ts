// Where typed JSON goes wrong and what the slip probably is, for a person (the console checks a run's or a
// schedule's input with it as it is typed; the API says the same when it refuses one, model/input-parsing.ts): "something is missing near line 2,
// column 5 — check for a missing comma, quote or bracket", not the parser's "Unexpected token } in JSON at
// position 12". The text is read here by JSON's own grammar (RFC 8259) rather than by reading the parser's error
// message, whose wording differs between browsers and Node versions.

type SlipKind =
  | 'missing'
  | 'ends_early'
  | 'open_quote'
  | 'trailing_comma'
  | 'single_quote'
  | 'bare_word'
  | 'unexpected'
  | 'extra'
  | 'bad_escape'
  | 'bad_number'
  | 'not_json';

export interface JsonSlip {
  /** 1-based, as an editor counts lines and columns. */
  line: number;
  column: number;
  /** What is wrong and what to check, in plain words. */
  what: string;
  hint: string;
}

class Slip {
  constructor(
    readonly at: number,
    readonly kind: SlipKind,
    readonly found = '',
  ) {}
}

const WORDS: Record<SlipKind, (found: string) => { what: string; hint: string }> = {
  missing: () => ({ what: 'something is missing', hint: 'check for a missing comma, quote or bracket' }),
  ends_early: () => ({
    what: 'it ends too soon',
    hint: 'check for a missing closing bracket ] or brace }, or a value after the last colon or comma',
  }),
  open_quote: () => ({ what: 'a text in quotes is not closed', hint: 'check for a missing closing quote "' }),
  trailing_comma: () => ({
    what: 'there is a comma with nothing after it',
    hint: 'remove the comma before the closing bracket',
  }),
  single_quote: () => ({ what: 'a text is in single quotes', hint: 'JSON needs double quotes: "like this"' }),
  bare_word: (found) => ({
    what: `the word ${found} is not in quotes`,
    hint: 'put text in double quotes: "like this" (only true, false and null go without)',
  }),
  unexpected: (found) => ({
    what: `“${found}” is not expected there`,
    hint: 'check for a missing or extra comma, quote or bracket',
  }),
  extra: () => ({
    what: 'there is more after the end',
    hint: 'to give several items, put them in one list: [{…}, {…}]',
  }),
  bad_escape: () => ({ what: 'a backslash starts an unknown escape', hint: 'write \\\\ for a backslash in a text' }),
  bad_number: () => ({ what: 'a number is not written as JSON writes them', hint: 'write it like 12, -3 or 4.5' }),
  not_json: (found) => ({
    what: `it starts with “${found}”`,
    hint: 'JSON starts with [ (a list of items) or { (one item)',
  }),
};

/** The first line of a text, cut to a length a message can quote. */
function beginning(text: string): string {
  const line = text.split(/\r?\n/)[0];
  return line.length > 30 ? `${line.slice(0, 30)}…` : line;
}

/** What is wrong with `text` as JSON, and where; null when it is valid JSON. */
export function jsonSlip(text: string): JsonSlip | null {
  try {
    scan(text);
    return null;
  } catch (err) {
    if (!(err instanceof Slip)) throw err;
    let slip = err;
    // Text that is not JSON at all (CSV, a sentence) from its first character: said as that, not as a word to quote.
    const first = text.length - text.trimStart().length;
    if (slip.at === first && (slip.kind === 'bare_word' || slip.kind === 'unexpected'))
      slip = new Slip(slip.at, 'not_json', beginning(text.slice(first)));
    const before = text.slice(0, slip.at);
    const lineStart = before.lastIndexOf('\n') + 1;
    return {
      line: before.split('\n').length,
      column: Array.from(before.slice(lineStart)).length + 1,
      ...WORDS[slip.kind](slip.found),
    };
  }
}

/** "… near line 2, column 5 — check for …": what is wrong with `text` as JSON, or null when it is JSON. */
export function jsonProblem(text: string): string | null {
  const slip = jsonSlip(text);
  return slip ? `${slip.what} near line ${slip.line}, column ${slip.column} — ${slip.hint}` : null;
}

/** "The input is not valid JSON: … near line 2, column 5 — …", or null when it is JSON. */
export function jsonInputProblem(text: string): string | null {
  const problem = jsonProblem(text);
  return problem ? `The input is not valid JSON: ${problem}.` : null;
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/** Reads `text` as one JSON value; throws a Slip at the first place it cannot be JSON. */
function scan(text: string): void {
  let i = 0;
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i])) i++;
  };
  const slip = (kind: SlipKind, at = i, found = ''): never => {
    throw new Slip(at, kind, found);
  };
  /** The next non-space character, which must be there. */
  const next = (): string => {
    space();
    return i < text.length ? text[i] : slip('ends_early');
  };

  const quoted = () => {
    const start = i++;
    while (i < text.length) {
      const c = text[i];
      if (c === '"') return void i++;
      if (c === '\\') {
        const escape = text[i + 1];
        if (escape === 'u' && /^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) i += 6;
        else if (escape !== undefined && '"\\/bfnrt'.includes(escape)) i += 2;
        else slip('bad_escape');
        continue;
      }
      // A line break inside quotes: the closing quote was most likely left out.
      if (c < ' ') slip('open_quote', start);
      i++;
    }
    slip('open_quote', start);
  };

  const value = (): void => {
    const c = next();
    if (c === '{') return object();
    if (c === '[') return array();
    if (c === '"') return quoted();
    if (c === '-' || (c >= '0' && c <= '9')) {
      NUMBER.lastIndex = i;
      if (!NUMBER.test(text)) slip('bad_number');
      i = NUMBER.lastIndex;
      return;
    }
    for (const word of ['true', 'false', 'null']) if (text.startsWith(word, i)) return void (i += word.length);
    if (c === "'") slip('single_quote');
    const word = /^[A-Za-z_][\w.]*/.exec(text.slice(i))?.[0];
    if (word) slip('bare_word', i, word);
    slip('unexpected', i, c);
  };

  const object = () => {
    i++;
    if (next() === '}') return void i++;
    for (;;) {
      const c = next();
      if (c === '}') slip('trailing_comma');
      if (c === "'") slip('single_quote');
      if (c !== '"') {
        const word = /^[A-Za-z_]\w*/.exec(text.slice(i))?.[0];
        if (word) slip('bare_word', i, word);
        slip('unexpected', i, c);
      }
      quoted();
      if (next() !== ':') slip('missing');
      i++;
      value();
      const after = next();
      i++;
      if (after === '}') return;
      if (after !== ',') slip('missing', i - 1);
    }
  };

  const array = () => {
    i++;
    if (next() === ']') return void i++;
    for (;;) {
      if (next() === ']') slip('trailing_comma');
      value();
      const after = next();
      i++;
      if (after === ']') return;
      if (after !== ',') slip('missing', i - 1);
    }
  };

  value();
  space();
  if (i < text.length) slip('extra');
}
