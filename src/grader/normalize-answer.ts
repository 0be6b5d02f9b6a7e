/**
 * String normalisation of one extracted answer before it is parsed: delimiters and spacing
 * commands, \left/\right, \dfrac/\tfrac, units and unit words, degrees, percent, currency,
 * thousands separators and trailing punctuation. It only removes notation that carries no
 * mathematical value; structure (brackets, commas, relations) is left for the parser.
 */

/** Words that name a unit when they follow a quantity; removed with an optional ^2 / ^3. */
const UNIT_WORDS =
  'degrees|degree|deg|cents|cent|dollars|dollar|units|unit|sq|square|cubic|cm|mm|km|m|meters|meter|metres|metre|inches|inch|in|feet|foot|ft|yards|yard|yd|miles|mile|mph|seconds|second|s|minutes|minute|min|hours|hour|hr|days|day|weeks|week|years|year|pounds|pound|lbs|lb|ounces|ounce|oz|grams|gram|g|kg|liters|liter|litres|litre|gallons|gallon|percentage|percent|pct|points|point|people|students|ways|times';

const UNIT_TEXT = new RegExp(
  String.raw`\\(?:text|textrm|textup|mbox|mathrm|textnormal)\s*\{\s*(?:(?:${UNIT_WORDS})\b\s*)+\}(?:\s*\^\s*\{?\s*[23]\s*\}?)?`,
  'g',
);
const TRAILING_UNIT = new RegExp(
  String.raw`(?<=[\d}\s)])\s*(?:(?:${UNIT_WORDS})(?:\s*\^\s*\{?[23]\}?)?\s*)+$`,
);

/** A unit after a number inside a list (`12 cm, 5`), dropped item by item. */
const LISTED_UNIT = new RegExp(
  String.raw`(?<=\d)\s+(?:${UNIT_WORDS})(?:\s*\^\s*\{?[23]\}?)?(?=\s*[,;}]|\s*\\\}|$)`,
  'g',
);

const NUMBER_WITH_WORDS = /^([+-]?\d+(?:,\d{3})*(?:\.\d+)?) ([A-Za-z]{2,}(?: [A-Za-z]{2,}){0,2})$/;
/** Words after a number that change its value or make it an expression, not a unit. */
const NOT_UNIT_WORDS =
  /\b(?:pi|sin|cos|tan|cot|sec|csc|log|ln|exp|sqrt|hundreds?|thousands?|millions?|billions?|trillions?|dozens?|choose|mod|and|or|times|over|plus|minus|squared|cubed|factorial|percent)\b/i;

const UNICODE: [RegExp, string][] = [
  [/[−–—]/g, '-'],
  [/×/g, '\\times '],
  [/[·⋅]/g, '\\cdot '],
  [/÷/g, '\\div '],
  [/π/g, '\\pi '],
  [/∞/g, '\\infty '],
  [/√/g, '\\sqrt '],
  [/≤/g, '\\le '],
  [/≥/g, '\\ge '],
  [/≠/g, '\\ne '],
  [/≈/g, '\\approx '],
  [/∪/g, '\\cup '],
  [/°/g, '^\\circ'],
  [/[€£¥]/g, ' '],
  [/²/g, '^2'],
  [/³/g, '^3'],
  [/\u00a0|\u2009|\u202f/g, ' '],
];

const REWRITES: [RegExp, string][] = [
  // Delimiters and sizing.
  [/\\\$/g, ''],
  [/\$/g, ''],
  [/\\[([]|\\[)\]]/g, ''],
  [/\\(?:left|right|[bB]igg?[lr]?)\s*\./g, ''],
  [/\\(?:left|right|[bB]igg?[lr]?)(?![A-Za-z])/g, ''],
  [/\\(?:displaystyle|textstyle|limits|mathbf|boldsymbol)(?![A-Za-z])/g, ''],
  // Spacing (`10,\!080` first: a thousands separator written with a negative space).
  [/,\s*\\!\s*/g, ','],
  [/(?<!\\)\\[!,;:> ]/g, ' '],
  [/\\q?quad(?![A-Za-z])/g, ' '],
  [/~/g, ' '],
  [/\s*\{\s*,\s*\}\s*/g, ','],
  [/_\{(\w)\}/g, '_$1'],
  // Command spellings.
  [/\\[dtc]frac(?![A-Za-z])/g, '\\frac'],
  [/\\leq?(?:slant)?(?![A-Za-z])/g, '\\le '],
  [/\\geq?(?:slant)?(?![A-Za-z])/g, '\\ge '],
  [/\\neq?(?![A-Za-z])/g, '\\ne '],
  [/\\(?:approx|simeq|thickapprox)(?![A-Za-z])/g, '\\approx '],
  [/\\lt(?![A-Za-z])/g, '<'],
  [/\\gt(?![A-Za-z])/g, '>'],
  [/<=/g, '\\le '],
  [/>=/g, '\\ge '],
  [/!=/g, '\\ne '],
  [/\\operatorname\s*\{\s*([A-Za-z]+)\s*\}/g, '\\$1'],
  [/\\(?:mathrm|mathit|operatorname)\s*\{\s*([ei])\s*\}/g, '$1'],
  // Degrees and percent.
  [/\^\s*\{\s*\\circ\s*\}|\^\s*\\circ|\\circ|\\degree(?![A-Za-z])/g, ''],
  [/\\?%/g, ''],
];

/** Normalises one answer string (already extracted); the result has single spaces only. */
export function normalizeAnswer(answer: string): string {
  let text = answer;
  for (const [pattern, replacement] of UNICODE) text = text.replace(pattern, replacement);
  for (const [pattern, replacement] of REWRITES) text = text.replace(pattern, replacement);
  text = text.replace(UNIT_TEXT, ' ');
  text = unwrapText(text);
  // `1 or -2`, `3 and 4`: words that join listed values are list commas, as `\text{ or }` is.
  text = text.replace(/\s(?:or|and)\s/g, ', ');
  // `(2,5)or(5,2)`: the same words written without spaces between bracketed values.
  text = text.replace(/(?<=[)\]])\s*(?:or|and)\s*(?=[-([\d\\])/g, ', ');
  text = text.replace(/\s+/g, ' ').trim();
  text = text.replace(/[.,;:\s]+$/, '').replace(/^[=:\s]+/, '');
  text = text.replace(TRAILING_UNIT, '').trim();
  if (/[,;]/.test(text)) text = text.replace(LISTED_UNIT, '');
  // `12 apples`, `12 \text{ red apples}`: a number followed only by a few words is that number.
  const counted = NUMBER_WITH_WORDS.exec(text);
  if (counted !== null && !NOT_UNIT_WORDS.test(counted[2]!)) text = counted[1]!;
  // Thousands separators, only when the whole answer is one number written that way.
  if (/^[+-]?[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?$/.test(text)) text = text.replace(/,/g, '');
  if (/^[+-]?\d{1,3}(?: \d{3})+(?:\.\d+)?$/.test(text)) text = text.replace(/ /g, '');
  return text;
}

/** `\text{…}` and friends: "or"/"and" become list commas, other words stay as plain text. */
function unwrapText(text: string): string {
  return text.replace(
    /\\(text|textrm|textup|textbf|textit|mbox|mathrm|textnormal)\s*\{([^{}]*)\}/g,
    (_whole, command: string, content: string) => {
      const trimmed = content.trim();
      if (/^(?:or|and)$/i.test(trimmed)) return ',';
      // `\text{13}`: digits set in plain text mode are a label, not the number (kept as written).
      if (command === 'text' && /^\d+$/.test(trimmed)) return `\\text{${trimmed}}`;
      return content;
    },
  );
}
