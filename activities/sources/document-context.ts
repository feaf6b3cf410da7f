// The context a passage is searched with: the opening of its document (a title, an invoice's letterhead and
// header, a letter's sender and addressee), up to a couple of hundred characters. Without it a question that names
// the document ("the total due on invoice 2291") finds the opening passage, the only one that names it, above the
// passage that answers. Every passage of the document has it, the opening's own passages too: a word of the
// opening then names the document for all its passages alike, and only the words a passage holds beyond it tell
// the passages apart (retrieval.ts). A document the opening holds whole has none. In the full-text index the context has the lowest weight, so it lets a
// passage match a question without outranking one whose own text matches.

/** Enough for a title with its number, date and addressee; a document that opens with prose gives its first words. */
const maxOpeningChars = 200;

/**
 * The opening of a document from its passages' texts, in reading order: its title (the first line of the first
 * passage) on a line of its own, then what follows.
 */
export function documentOpening(passages: string[]): string {
  const [title = '', ...rest] = passages.join('\n').trim().split('\n');
  const text = `${title.trim()}\n${rest.join(' ').replace(/\s+/g, ' ').trim()}`.trim();
  if (text.length <= maxOpeningChars) return text;
  const cut = text.slice(0, maxOpeningChars);
  const space = cut.lastIndexOf(' ');
  return space > maxOpeningChars / 2 ? cut.slice(0, space) : cut;
}

/**
 * Whether the opening holds the whole document (`passages`: all of them, or its first few): a short document whose
 * every passage is its own opening, to which a context would add only the other passages' words.
 */
export function holdsWholeDocument(opening: string, passages: string[], more: boolean): boolean {
  const flat = (s: string) => s.replace(/\s+/g, ' ').trim();
  return !more && passages.every((p) => flat(opening).includes(flat(p)));
}

/**
 * What is embedded for a passage: its document's title above its text. Only the title: the small embedding model
 * reads a longer opening (table rows, an address) as the passage's subject and ranks every passage alike.
 */
export function textToEmbed(passage: { text: string; context: string | null }): string {
  const title = passage.context?.split('\n')[0];
  return title && !passage.text.startsWith(title) ? `${title}\n${passage.text}` : passage.text;
}
