/**
 * From a normalised answer string to its structure: an expression, a word answer, a tuple or
 * interval (brackets kept), a union, an order-free collection (a set, a list, `a \pm b`), a
 * matrix, or a relation (`=`, `<`, `\le`, …). Each leaf expression is parsed once here.
 */
import { floatValue } from './float-value.ts';
import { parseLatex } from './latex-parser.ts';
import { freeSymbols, type MathNode } from './math-node.ts';

export type Answer =
  | { kind: 'expression'; source: string; node: MathNode }
  /** Text that is not a parseable expression (kept for exact string comparison). */
  | { kind: 'unparsed'; source: string; error: string }
  | { kind: 'text'; source: string }
  /** `fromInequality`: written as `a < x \le b`, read as the interval `(a, b]`. */
  | { kind: 'tuple'; source: string; open: string; close: string; items: Answer[]; fromInequality?: true }
  | { kind: 'union'; source: string; parts: Answer[] }
  /** Order-free: `\{…\}`, a bare list `a, b`, or the two values of `a \pm b`. */
  | { kind: 'collection'; source: string; items: Answer[] }
  | { kind: 'matrix'; source: string; rows: Answer[][] }
  | { kind: 'relation'; source: string; operators: string[]; sides: Answer[] };

const MAX_ITEMS = 64;
const SCIENTIFIC = /^(?:\d+\.?\d*|\.\d+)[eE][+-]?\d{1,4}$/;
const MIXED_NUMBER = /^(-?)(\d+)\s*\\frac\s*(?:\{(\d+)\}|(\d))\s*(?:\{(\d+)\}|(\d))$/;
const RELATION = /^(?:=|<|>|\\le|\\ge|\\ne|\\approx)$/;
/** A single variable, optionally subscripted: the left side of `x = 5`. */
const VARIABLE = /^\s*[A-Za-z](?:_\{?\w+\}?)?\s*$/;
const CHOICE = /^\(([A-E])\)$|^([A-E])$/;
const FUNCTION_WORDS = /^(?:sin|cos|tan|cot|sec|csc|log|ln|exp|sqrt|pi)$/;

/** The answer's canonical source: normalised text without spaces. */
function squeeze(text: string): string {
  return text.replace(/\s+/g, '');
}

/** Splits at top-level separators (outside (), [], {} and \{ \}); intervals may mix brackets. */
export function splitTopLevel(text: string, isSeparator: (token: string) => boolean): string[] | null {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  let index = 0;
  while (index < text.length) {
    let token = text[index]!;
    if (token === '\\') {
      const match = /^\\(?:[A-Za-z]+|.)/.exec(text.slice(index, index + 32));
      token = match ? match[0] : '\\';
    }
    if (token === '(' || token === '[' || token === '{' || token === '\\{') depth++;
    else if (token === ')' || token === ']' || token === '}' || token === '\\}') depth--;
    if (depth < 0) return null;
    if (depth === 0 && isSeparator(token)) {
      parts.push(text.slice(start, index));
      parts.push(token);
      start = index + token.length;
    }
    index += token.length;
  }
  if (depth !== 0) return null;
  parts.push(text.slice(start));
  return parts;
}

/** Parses a normalised answer into its structure. */
export function parseAnswer(text: string, depth = 0): Answer {
  const trimmed = text.trim();
  const source = squeeze(trimmed);
  if (depth > 8) return { kind: 'unparsed', source, error: 'structure too deep' };

  const matrix = wholeMatrix(trimmed);
  if (matrix !== null) return parseMatrix(matrix, source, depth);
  // `A + B = \begin{pmatrix}…\end{pmatrix}`: a matrix computation's answer is its result.
  const result = matrixResult(trimmed);
  if (result !== null) return parseAnswer(result, depth + 1);

  const pieces = splitTopLevel(trimmed, (token) => token === ',' || token === ';');
  if (pieces === null) return { kind: 'unparsed', source, error: 'unbalanced brackets' };
  const groups = assignmentGroups(pieces);
  if (groups !== null) {
    if (groups.length > MAX_ITEMS) return { kind: 'unparsed', source, error: 'too many items' };
    return { kind: 'collection', source, items: groups.map((group) => parseAnswer(group, depth + 1)) };
  }
  const listItems = pieces.filter((_, index) => index % 2 === 0);
  if (listItems.length > 1) {
    if (listItems.length > MAX_ITEMS) return { kind: 'unparsed', source, error: 'too many items' };
    return { kind: 'collection', source, items: expandItems(listItems, depth) };
  }

  const union = splitTopLevel(trimmed, (token) => token === '\\cup');
  if (union !== null && union.length > 1) {
    const parts = union.filter((_, index) => index % 2 === 0).map((part) => parseAnswer(part, depth + 1));
    return { kind: 'union', source, parts };
  }

  const relation = parseRelation(trimmed, source, depth);
  if (relation !== null) return relation;

  if (trimmed.startsWith('\\{') && trimmed.endsWith('\\}') && closesAtEnd(trimmed)) {
    const inner = trimmed.slice(2, -2);
    const items = splitTopLevel(inner, (token) => token === ',')?.filter((_, index) => index % 2 === 0) ?? [];
    return { kind: 'collection', source, items: expandItems(items, depth) };
  }

  // `{1,3}`: a set written with bare braces (a TeX group never holds a top-level comma answer).
  if (trimmed.startsWith('{') && trimmed.endsWith('}') && closesAtEnd(trimmed)) {
    const items = splitTopLevel(trimmed.slice(1, -1), (token) => token === ',')?.filter(
      (_, index) => index % 2 === 0,
    );
    if (items !== undefined && items.length > 1)
      return { kind: 'collection', source, items: expandItems(items, depth) };
  }

  const bracketed = /^[([]/.test(trimmed) && /[)\]]$/.test(trimmed) && closesAtEnd(trimmed);
  if (bracketed) {
    const inner = trimmed.slice(1, -1);
    let parts = splitTopLevel(inner, (token) => token === ',');
    // `(1;0;2)`: `;` separates the entries when there is no comma.
    if (parts !== null && parts.length === 1) parts = splitTopLevel(inner, (token) => token === ';');
    if (parts !== null && parts.length > 1) {
      const items = parts.filter((_, index) => index % 2 === 0).map((part) => parseAnswer(part, depth + 1));
      return { kind: 'tuple', source, open: trimmed[0]!, close: trimmed[trimmed.length - 1]!, items };
    }
  }

  if (/\\(?:pm|mp)(?![A-Za-z])/.test(trimmed)) {
    return { kind: 'collection', source, items: expandItems([trimmed], depth) };
  }

  // A numeral in another base (`52_8`, `4210_{5}`) is compared as written.
  if (/^[0-9A-Fa-f]+_\{?\d+\}?$/.test(source)) return { kind: 'text', source: source.replace(/[{}]/g, '') };
  const choice = CHOICE.exec(source);
  if (choice) return { kind: 'text', source: choice[1] ?? choice[2]! };
  if (isWords(trimmed)) return { kind: 'text', source: trimmed.toLowerCase().replace(/\s+/g, ' ') };

  if (SCIENTIFIC.test(source)) return { kind: 'expression', source, node: { type: 'number', text: source } };
  const ratio = parseRatio(trimmed, source, depth);
  if (ratio !== null) return ratio;
  const mixed = MIXED_NUMBER.exec(trimmed);
  if (mixed && BigInt(mixed[3] ?? mixed[4]!) < BigInt(mixed[5] ?? mixed[6]!)) {
    // `1\frac{4}{5}` is the mixed number 9/5, not 1 · 4/5.
    const sum = `(${mixed[2]}+\\frac{${mixed[3] ?? mixed[4]}}{${mixed[5] ?? mixed[6]}})`;
    const parsedMixed = parseLatex(`${mixed[1]}${sum}`);
    if (parsedMixed.ok) return { kind: 'expression', source, node: parsedMixed.node };
  }
  const parsed = parseLatex(trimmed);
  return parsed.ok
    ? { kind: 'expression', source, node: parsed.node }
    : { kind: 'unparsed', source, error: parsed.error };
}

/** A matrix, also inside brackets (`\left[\begin{array}{cc}…\end{array}\right]`): its body, or null. */
function wholeMatrix(text: string): string | null {
  const matrix =
    /^[([]?\s*\\begin\{([pbBvV]?matrix|smallmatrix|array)\}(?:\{[lcr|]*\})?(.*)\\end\{\1\}\s*[)\]]?$/s.exec(
      text,
    );
  // One environment only: `\begin{pmatrix}…\end{pmatrix} + \begin{pmatrix}…\end{pmatrix}` is a sum.
  if (matrix === null || matrix[2]!.includes(`\\end{${matrix[1]}}`)) return null;
  return matrix[2]!;
}

/**
 * The matrix after the last top-level `=` of a matrix computation (`M_1 + M_2 = M`, `AB =
 * M_1 M_2 = M`) when a side before it holds a matrix; null otherwise (`A = M` is a label).
 */
function matrixResult(text: string): string | null {
  if (!text.includes('\\begin') || !text.includes('=')) return null;
  const parts = splitTopLevel(text, (token) => token === '=');
  if (parts === null || parts.length < 3) return null;
  const last = parts.at(-1)!.trim();
  if (wholeMatrix(last) === null) return null;
  const before = parts.slice(0, -2).filter((_, index) => index % 2 === 0);
  return before.some((side) => side.includes('\\begin')) ? last : null;
}

/**
 * `a=3,b=1;a=1,b=3`: `;` separates groups of assignments when every group is two or more
 * `name = value` items joined by `,`; each group is then one answer (a labelled list). Null for
 * any other list, which keeps `,` and `;` alike.
 */
function assignmentGroups(pieces: string[]): string[] | null {
  if (!pieces.some((piece) => piece === ';') || !pieces.some((piece) => piece === ',')) return null;
  const groups: string[] = [''];
  for (const piece of pieces) {
    if (piece === ';') groups.push('');
    else groups[groups.length - 1] += piece;
  }
  const assignment = /^\s*[A-Za-z](?:_\{?\w+\}?)?\s*=[^=]+$/;
  const valid = groups.every((group) => {
    const items = splitTopLevel(group, (token) => token === ',')?.filter((_, index) => index % 2 === 0);
    return items !== undefined && items.length > 1 && items.every((item) => assignment.test(item));
  });
  return valid && groups.length > 1 ? groups : null;
}

/** `11:21`: a ratio is the quotient of its two sides (so `22:42` and `\frac{11}{21}` are equal). */
function parseRatio(text: string, source: string, depth: number): Answer | null {
  const parts = splitTopLevel(text, (token) => token === ':');
  if (parts === null || parts.length !== 3) return null;
  const [numerator, denominator] = [parseAnswer(parts[0]!, depth + 1), parseAnswer(parts[2]!, depth + 1)];
  if (numerator.kind !== 'expression' || denominator.kind !== 'expression') return null;
  return {
    kind: 'expression',
    source,
    node: { type: 'divide', numerator: numerator.node, denominator: denominator.node },
  };
}

/** Whether the first bracket closes exactly at the end (so `(1,2)\cup(3,4)` is not one tuple). */
function closesAtEnd(text: string): boolean {
  const parts = splitTopLevel(text, () => false);
  if (parts === null) return false;
  let depth = 0;
  for (let index = 0; index < text.length; index++) {
    const character = text[index]!;
    if (character === '\\') {
      const next = text[index + 1];
      if (next === '{') depth++;
      else if (next === '}') depth--;
      index++;
    } else if ('([{'.includes(character)) depth++;
    else if (')]}'.includes(character)) depth--;
    if (depth === 0 && index < text.length - 1) return false;
  }
  return depth === 0;
}

/** Words, not mathematics: `Evelyn`, `east`, `no solution`. */
function isWords(text: string): boolean {
  if (!/^[A-Za-z][A-Za-z '-]*[A-Za-z]$/.test(text)) return false;
  return text.split(/[\s'-]+/).some((word) => word.length >= 3 && !FUNCTION_WORDS.test(word));
}

/** Parses list items, expanding `a \pm b` into its two values. */
function expandItems(items: string[], depth: number): Answer[] {
  const answers: Answer[] = [];
  for (const item of items) {
    if (/\\(?:pm|mp)(?![A-Za-z])/.test(item)) {
      const plus = item.replace(/\\pm(?![A-Za-z])/g, '+').replace(/\\mp(?![A-Za-z])/g, '-');
      const minus = item.replace(/\\pm(?![A-Za-z])/g, '-').replace(/\\mp(?![A-Za-z])/g, '+');
      answers.push(parseAnswer(plus, depth + 1), parseAnswer(minus, depth + 1));
    } else answers.push(parseAnswer(item, depth + 1));
  }
  return answers;
}

/** `a = b`, `a < b \le c`; a leading `x =` / `x \in` before a value is dropped. */
function parseRelation(text: string, source: string, depth: number): Answer | null {
  const membership = /^[A-Za-z](?:_\{?\w+\}?)?\s*\\in\s*(.+)$/s.exec(text);
  if (membership) return parseAnswer(membership[1]!, depth + 1);
  const parts = splitTopLevel(text, (token) => RELATION.test(token));
  if (parts === null || parts.length < 3) return null;
  const sides = parts.filter((_, index) => index % 2 === 0);
  const operators = parts.filter((_, index) => index % 2 === 1);
  if (sides.some((side) => side.trim() === '')) return null;
  if (operators.length === 1 && operators[0] === '=' && VARIABLE.test(sides[0]!)) {
    // `x = 5`: the value is the answer, unless the right side mentions variables (`y = 2x + 3`).
    const value = parseAnswer(sides[1]!, depth + 1);
    if (value.kind !== 'expression' || freeSymbols(value.node).length === 0) return value;
  }
  const chain = chainValue(sides, operators);
  if (chain !== null) {
    // `x = 5+5+1 = 11`, `x = \frac13 \approx 0.33`: the last exact value, when it is a number.
    const value = parseAnswer(chain, depth + 1);
    if (value.kind !== 'expression' || freeSymbols(value.node).length === 0) return value;
  }
  const interval = doubleInequality(sides, operators, source, depth);
  if (interval !== null) return interval;
  const valueSet = valueSetOf(sides, operators, source, depth);
  if (valueSet !== null) return valueSet;
  return { kind: 'relation', source, operators, sides: sides.map((side) => parseAnswer(side, depth + 1)) };
}

/**
 * The value of a chain of `=` / `\approx` (two or more relations, or one `\approx`): the last
 * side before the first `\approx` (the last exact one), or the approximation itself after a
 * lone variable (`x \approx 11`). Null when it is not such a chain.
 */
function chainValue(sides: string[], operators: string[]): string | null {
  if (!operators.every((operator) => operator === '=' || operator === '\\approx')) return null;
  const approx = operators.indexOf('\\approx');
  if (operators.length < 2 && approx === -1) return null;
  let index = approx === -1 ? sides.length - 1 : approx;
  if (index === 0 && VARIABLE.test(sides[0]!)) index = 1;
  return sides[index]!;
}

/** `a < x \le b` (or `b > x \ge a`): the interval `(a, b]`. */
function doubleInequality(
  sides: string[],
  operators: string[],
  source: string,
  depth: number,
): Answer | null {
  if (operators.length !== 2 || !VARIABLE.test(sides[1]!)) return null;
  const [first, second] = operators as [string, string];
  const rising = /^(?:<|\\le)$/;
  const falling = /^(?:>|\\ge)$/;
  let low: string;
  let high: string;
  let open: string;
  let close: string;
  if (rising.test(first) && rising.test(second)) {
    [low, high] = [sides[0]!, sides[2]!];
    open = first === '<' ? '(' : '[';
    close = second === '<' ? ')' : ']';
  } else if (falling.test(first) && falling.test(second)) {
    [low, high] = [sides[2]!, sides[0]!];
    open = second === '>' ? '(' : '[';
    close = first === '>' ? ')' : ']';
  } else return null;
  return {
    kind: 'tuple',
    source,
    open,
    close,
    items: [parseAnswer(low, depth + 1), parseAnswer(high, depth + 1)],
    fromInequality: true,
  };
}

/** A function's value `h(x)`, `f_1(t)`: a double inequality on it is the function's range. */
const FUNCTION_VALUE = /^\s*[A-Za-z](?:_\{?\w+\}?)?\s*\(\s*[A-Za-z]\s*\)\s*$/;
/** The absolute value of a name: `|t|`. */
const ABSOLUTE_NAME = /^\s*\|\s*[A-Za-z](?:_\{?\w+\}?)?\s*\|\s*$/;

/**
 * The set an inequality on a function's value or on `|t|` describes, as intervals (not marked
 * as written from an inequality, so an interval reference accepts them):
 * `-1 < h(x) < 3` → `(-1, 3)`, `f(x) \ge 2` → `[2, \infty)`, `2 \le |t| \le 5` →
 * `[-5, -2] \cup [2, 5]`, `|t| < 4` → `(-4, 4)`, `|t| \ge 1` → `(-\infty, -1] \cup [1, \infty)`.
 * Bounds must be numbers, in order (the low bound certainly below the high one, and a bound on
 * `|t|` certainly positive), else null.
 */
function valueSetOf(sides: string[], operators: string[], source: string, depth: number): Answer | null {
  const rising = (operator: string) => operator === '<' || operator === '\\le';
  const falling = (operator: string) => operator === '>' || operator === '\\ge';
  const mirror = (operator: string) => ({ '<': '>', '>': '<', '\\le': '\\ge', '\\ge': '\\le' })[operator]!;
  let low: string | null = null;
  let high: string | null = null;
  let lowStrict = true;
  let highStrict = true;
  let middle: string;
  if (operators.length === 2 && (operators.every(rising) || operators.every(falling))) {
    const ascending = rising(operators[0]!);
    [low, high] = ascending ? [sides[0]!, sides[2]!] : [sides[2]!, sides[0]!];
    [lowStrict, highStrict] = (ascending ? operators : [...operators].reverse()).map(
      (operator) => operator === '<' || operator === '>',
    ) as [boolean, boolean];
    middle = sides[1]!;
  } else if (operators.length === 1 && (rising(operators[0]!) || falling(operators[0]!))) {
    // As `middle OP bound`: a bound on the left mirrors the operator.
    const onLeft = ABSOLUTE_NAME.test(sides[1]!) || FUNCTION_VALUE.test(sides[1]!);
    const operator = onLeft ? mirror(operators[0]!) : operators[0]!;
    middle = onLeft ? sides[1]! : sides[0]!;
    const bound = onLeft ? sides[0]! : sides[1]!;
    if (rising(operator)) [high, highStrict] = [bound, operator === '<'];
    else [low, lowStrict] = [bound, operator === '>'];
  } else return null;
  const absolute = ABSOLUTE_NAME.test(middle);
  if (!absolute && !FUNCTION_VALUE.test(middle)) return null;
  const lowAnswer = low === null ? null : parseAnswer(low, depth + 1);
  const highAnswer = high === null ? null : parseAnswer(high, depth + 1);
  const number = (answer: Answer | null) =>
    answer?.kind === 'expression' && freeSymbols(answer.node).length === 0
      ? floatValue(answer.node, new Map())
      : null;
  const [lowValue, highValue] = [number(lowAnswer), number(highAnswer)];
  if ((lowAnswer !== null && lowValue === null) || (highAnswer !== null && highValue === null)) return null;
  if (lowValue && highValue && !(lowValue.value + lowValue.error < highValue.value - highValue.error))
    return null;
  const interval = (open: string, items: Answer[], close: string): Answer => ({
    kind: 'tuple',
    source,
    open,
    close,
    items,
  });
  const [openLow, closeHigh] = [lowStrict ? '(' : '[', highStrict ? ')' : ']'];
  const infinity = (sign: string) => parseAnswer(`${sign}\\infty`, depth + 1);
  if (!absolute)
    return interval(openLow, [lowAnswer ?? infinity('-'), highAnswer ?? infinity('')], closeHigh);
  // On |t|: a positive low bound splits the set in two, mirrored about 0.
  for (const value of [lowValue, highValue]) if (value && !(value.value - value.error > 0)) return null;
  const negative = (answer: Answer): Answer =>
    answer.kind === 'expression'
      ? { kind: 'expression', source: `-(${answer.source})`, node: { type: 'negate', argument: answer.node } }
      : answer;
  if (lowAnswer === null)
    return interval(closeHigh === ']' ? '[' : '(', [negative(highAnswer!), highAnswer!], closeHigh);
  const mirroredClose = openLow === '[' ? ']' : ')';
  const left = interval(
    highAnswer === null ? '(' : closeHigh === ']' ? '[' : '(',
    [highAnswer === null ? infinity('-') : negative(highAnswer), negative(lowAnswer)],
    mirroredClose,
  );
  const right = interval(
    openLow,
    [lowAnswer, highAnswer ?? infinity('')],
    highAnswer === null ? ')' : closeHigh,
  );
  return { kind: 'union', source, parts: [left, right] };
}

function parseMatrix(body: string, source: string, depth: number): Answer {
  const rows = splitTopLevel(body, (token) => token === '\\\\');
  if (rows === null) return { kind: 'unparsed', source, error: 'unbalanced matrix' };
  const cells = rows
    .filter((_, index) => index % 2 === 0)
    .filter((row) => row.trim() !== '')
    .map((row) =>
      (splitTopLevel(row, (token) => token === '&') ?? [row]).filter((_, index) => index % 2 === 0),
    );
  return {
    kind: 'matrix',
    source,
    rows: cells.map((row) => row.map((cell) => parseAnswer(cell, depth + 1))),
  };
}
