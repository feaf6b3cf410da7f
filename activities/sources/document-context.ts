// The context a passage is searched with: the opening of its document (a title, an invoice's letterhead and
// header, a letter's sender and addressee), up to a couple of hundred characters. Without it a question that names
// the document ("the total due on invoice 2291") finds the opening passage, the only one that names it, above the
// passage that answers. In the full-text index the context has the lowest weight, so it lets a passage match a
// question without outranking one whose own text matches.

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

/** The context of a passage: none for a passage the opening holds in full (it would repeat itself). */
export function contextFor(text: string, opening: string): string | null {
  const flat = (s: string) => s.replace(/\s+/g, ' ').trim();
  return flat(opening).includes(flat(text)) ? null : opening;
}

/**
 * What is embedded for a passage: its document's title above its text. Only the title: the small embedding model
 * reads a longer opening (table rows, an address) as the passage's subject and ranks every passage alike.
 */
export function textToEmbed(passage: { text: string; context: string | null }): string {
  const title = passage.context?.split('\n')[0];
  return title ? `${title}\n${passage.text}` : passage.text;
}
