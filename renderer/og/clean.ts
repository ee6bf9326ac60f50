/**
 * Cleaning of OG text fields before they are counted or measured (spec 4.5 rule 1), and the
 * two checks that follow it (rule 2): a printable character, and the length in characters.
 */

// Tabs, newlines and carriage returns become spaces before anything else is removed.
const LINE_BREAKS = /[\t\n\r]/g;
// C0, DEL and C1 controls; LRM and RLM; bidi embeddings and overrides (U+202A-202E);
// bidi isolates (U+2066-2069). Exactly the spec's list, nothing more.
const REMOVED = /[\u0000-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const WHITESPACE_RUN = /\s+/gu;
// A character that puts ink on the card: letters, marks, numbers, punctuation, symbols, except
// the default-ignorable ones that draw nothing (variation selectors, Hangul fillers).
const PRINTABLE = /(?!\p{Default_Ignorable_Code_Point})[\p{L}\p{M}\p{N}\p{P}\p{S}]/u;

/** Spec 4.5 rule 1: line breaks to spaces, controls removed, whitespace runs collapsed, trimmed. */
export function cleanText(raw: string): string {
  return raw.replace(LINE_BREAKS, ' ').replace(REMOVED, '').replace(WHITESPACE_RUN, ' ').trim();
}

/** Whether cleaned text holds at least one printable character (spec 4.5 rule 2). */
export function hasPrintable(text: string): boolean {
  return PRINTABLE.test(text);
}

/** Length in characters, i.e. Unicode code points: an emoji such as U+1F600 is one, not two. */
export function characterCount(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}
