// A section's heading read with each paragraph under it ("Working hours" above "Core hours are 10:00 to 15:00"),
// so that a passage says what it is about: a question worded like the heading finds the answer, not the heading
// alone. A heading with nothing under it stays a paragraph of its own.

export interface Block {
  text: string;
  heading?: boolean;
}

export function underHeadings(blocks: Block[]): string[] {
  const out: string[] = [];
  let heading: string | undefined;
  let headingUsed = true;
  for (const { text, heading: isHeading } of blocks) {
    if (text.trim() === '') continue;
    if (isHeading) {
      if (heading !== undefined && !headingUsed) out.push(heading);
      heading = text;
      headingUsed = false;
    } else {
      out.push(heading === undefined ? text : `${heading}\n${text}`);
      headingUsed = true;
    }
  }
  if (heading !== undefined && !headingUsed) out.push(heading);
  return out;
}
