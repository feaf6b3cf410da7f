// A minimal iCalendar (RFC 5545) reader and writer, enough for events: content lines are unfolded and parsed into
// components whose properties keep their raw values, so an event read, changed and written back keeps everything
// this connector does not know (alarms, recurrence rules, X- properties) exactly as it was.
// Escaping follows RFC 5545 3.3.11 for text values and RFC 6868 for parameter values; lines are folded at 75 octets
// without splitting a UTF-8 character.

export interface IcalProperty {
  name: string;
  /** Parameter values as decoded text (RFC 6868), by upper-case name. */
  params: Record<string, string>;
  /** The raw value, still escaped as the format has it. */
  value: string;
}

export interface IcalComponent {
  name: string;
  properties: IcalProperty[];
  components: IcalComponent[];
}

export class IcalSyntaxError extends Error {}

/** RFC 5545 3.3.11: backslash, semicolon, comma and newline are escaped in TEXT values. */
export const escapeText = (text: string) =>
  text
    .replace(/\\/g, '\\\\')
    .replace(/;/g, '\\;')
    .replace(/,/g, '\\,')
    .replace(/\r\n|\r|\n/g, '\\n');

export const unescapeText = (value: string) =>
  value.replace(/\\([\\;,nN])/g, (_, c: string) => (c === 'n' || c === 'N' ? '\n' : c));

/** RFC 6868: ^, newline and " in a parameter value; quoted when it holds , ; or :. */
function encodeParam(value: string): string {
  const encoded = value
    .replace(/\^/g, '^^')
    .replace(/\r\n|\r|\n/g, '^n')
    .replace(/"/g, "^'");
  return /[,;:]/.test(encoded) ? `"${encoded}"` : encoded;
}

const decodeParam = (value: string) =>
  value.replace(/\^(\^|n|')/g, (_, c: string) => (c === 'n' ? '\n' : c === "'" ? '"' : '^'));

/** Splits a line into chunks of at most 75 octets (the first) and 74 after the leading space, on character bounds. */
function fold(line: string): string {
  const out: string[] = [];
  let current = '';
  let octets = 0;
  for (const ch of line) {
    const size = Buffer.byteLength(ch);
    if (octets + size > (out.length === 0 ? 75 : 74)) {
      out.push(current);
      current = '';
      octets = 0;
    }
    current += ch;
    octets += size;
  }
  out.push(current);
  return out.join('\r\n ');
}

function parseLine(line: string): IcalProperty {
  let i = 0;
  while (i < line.length && line[i] !== ';' && line[i] !== ':') i++;
  const name = line.slice(0, i).toUpperCase();
  if (!name) throw new IcalSyntaxError(`a content line has no name: ${line.slice(0, 80)}`);
  const params: Record<string, string> = {};
  while (line[i] === ';') {
    const eq = line.indexOf('=', i);
    if (eq < 0) throw new IcalSyntaxError(`a parameter has no value: ${line.slice(0, 80)}`);
    const key = line.slice(i + 1, eq).toUpperCase();
    i = eq + 1;
    const values: string[] = [];
    for (;;) {
      if (line[i] === '"') {
        const close = line.indexOf('"', i + 1);
        if (close < 0) throw new IcalSyntaxError(`an unclosed quote: ${line.slice(0, 80)}`);
        values.push(line.slice(i + 1, close));
        i = close + 1;
      } else {
        let j = i;
        while (j < line.length && !',;:'.includes(line[j])) j++;
        values.push(line.slice(i, j));
        i = j;
      }
      if (line[i] !== ',') break;
      i++;
    }
    params[key] = values.map(decodeParam).join(',');
  }
  if (line[i] !== ':') throw new IcalSyntaxError(`a content line has no value: ${line.slice(0, 80)}`);
  return { name, params, value: line.slice(i + 1) };
}

/** Parses an iCalendar object (usually one VCALENDAR) into its top-level components. */
export function parseIcal(text: string): IcalComponent[] {
  const lines = text.replace(/\r?\n[ \t]/g, '').split(/\r?\n/);
  const root: IcalComponent = { name: '', properties: [], components: [] };
  const stack = [root];
  for (const line of lines) {
    if (!line.trim()) continue;
    const prop = parseLine(line);
    const top = stack[stack.length - 1];
    if (prop.name === 'BEGIN') {
      const component = { name: prop.value.toUpperCase(), properties: [], components: [] };
      top.components.push(component);
      stack.push(component);
    } else if (prop.name === 'END') {
      if (stack.length === 1 || top.name !== prop.value.toUpperCase())
        throw new IcalSyntaxError(`END:${prop.value} does not close ${top.name || 'anything'}`);
      stack.pop();
    } else {
      top.properties.push(prop);
    }
  }
  if (stack.length > 1) throw new IcalSyntaxError(`${stack[stack.length - 1].name} is never closed`);
  return root.components;
}

export function serializeIcal(component: IcalComponent): string {
  const lines: string[] = [];
  const write = (c: IcalComponent) => {
    lines.push(`BEGIN:${c.name}`);
    for (const p of c.properties) {
      const params = Object.entries(p.params)
        .map(([k, v]) => `;${k}=${encodeParam(v)}`)
        .join('');
      lines.push(fold(`${p.name}${params}:${p.value}`));
    }
    c.components.forEach(write);
    lines.push(`END:${c.name}`);
  };
  write(component);
  return lines.join('\r\n') + '\r\n';
}

export const propertyOf = (c: IcalComponent, name: string) => c.properties.find((p) => p.name === name);
export const propertiesOf = (c: IcalComponent, name: string) => c.properties.filter((p) => p.name === name);
export const textOf = (c: IcalComponent, name: string) => {
  const p = propertyOf(c, name);
  return p === undefined ? undefined : unescapeText(p.value);
};

/** Replaces every `name` property with `props` (none removes it), keeping the place of the first one. */
export function setProperties(c: IcalComponent, name: string, props: Omit<IcalProperty, 'name'>[]) {
  const at = c.properties.findIndex((p) => p.name === name);
  const rest = c.properties.filter((p) => p.name !== name);
  const added = props.map((p) => ({ name, ...p }));
  rest.splice(at < 0 ? rest.length : at, 0, ...added);
  c.properties = rest;
}

export const setProperty = (c: IcalComponent, name: string, value: string, params: Record<string, string> = {}) =>
  setProperties(c, name, [{ params, value }]);

export const setText = (c: IcalComponent, name: string, text: string | undefined) =>
  setProperties(c, name, text === undefined || text === '' ? [] : [{ params: {}, value: escapeText(text) }]);
