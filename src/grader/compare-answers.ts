/**
 * The comparison rules, tried in order, each naming itself in the decision:
 *   exact     — identical normalised text, or equal exact rationals;
 *   numeric   — a rounded decimal against an exact value it rounds to (≥ 3 significant digits);
 *   structural— tuples/intervals (brackets must match), unions, sets and lists (order-free),
 *               matrices (shape, then entries), relations;
 *   symbolic  — the sandboxed SymPy check, for expressions the fast path cannot settle.
 * A float evaluation with error bounds may only reject (certainly different), never accept.
 */
import { exactValue } from './exact-value.ts';
import { certainlyDifferent, floatValue } from './float-value.ts';
import { freeSymbols, type MathNode, usesConstant } from './math-node.ts';
import { type Answer, parseAnswer, splitTopLevel } from './parse-answer.ts';
import { equals, parseDecimal, type Rational, subtract } from './rational.ts';
import type { SymbolicQuery, SymbolicVerdict } from './symbolic-query.ts';
import { toSympy } from './to-sympy.ts';
import type { GradeReason } from './types.ts';

export type Decision =
  | { outcome: 'equal'; reason: 'exact' | 'numeric' | 'structural' | 'symbolic' }
  | { outcome: 'different'; reason: 'mismatch' }
  | { outcome: 'undecided'; reason: Extract<GradeReason, 'timeout' | 'parse-error' | 'mismatch'> }
  /** The symbolic step could not run (an outage): no verdict at all. */
  | { outcome: 'unavailable'; reason: 'grader-unavailable'; cause: string };

export type CompareContext = {
  /** The sandboxed check, or null to skip the symbolic step. */
  symbolic: ((query: SymbolicQuery) => Promise<SymbolicVerdict>) | null;
  /**
   * Comparing entries of a matrix, vector or tuple: a rounded decimal needs only 2 significant
   * digits (`0.33` for `\frac13`) instead of 3.
   */
  entries?: boolean;
};

const EQUAL_EXACT: Decision = { outcome: 'equal', reason: 'exact' };
const DIFFERENT: Decision = { outcome: 'different', reason: 'mismatch' };
const STRUCTURAL: Decision = { outcome: 'equal', reason: 'structural' };
/** Sample points for symbols (positive, irregular), shared by the float rejection. */
const SAMPLE_POINTS = [0.7318, 1.6180339, 2.4142, 3.3166];

/** Compares a prediction with a reference (both parsed). */
export async function compareAnswers(
  prediction: Answer,
  reference: Answer,
  context: CompareContext,
): Promise<Decision> {
  if (prediction.source === reference.source) return EQUAL_EXACT;
  // `x = 2, y = 3` against the pair `(2, 3)` (or `(x,y) = (2,3)`): the values, by label or in order.
  // `y = 3, x = 2` against `x = 2, y = 3`: distinct labels pair the values, whatever the order.
  const byLabel = sameLabels(prediction, reference);
  if (byLabel !== null) return compareOrdered(byLabel[0], byLabel[1], context);
  const forward = labelledPair(prediction, reference);
  const backward = forward === null ? labelledPair(reference, prediction) : null;
  if (forward !== null) return compareOrdered(forward[0], forward[1], { ...context, entries: true });
  if (backward !== null) return compareOrdered(backward[1], backward[0], { ...context, entries: true });
  // `(5, \infty)` against the inequality `x > 5`: the reference decides, as for `a < x \le b`.
  if (reference.kind === 'relation' && prediction.kind === 'tuple') {
    const interval = oneSidedInterval(reference);
    if (interval !== null) return compareAnswers(prediction, interval, context);
  }
  // `k = 45` against `45`, `(p,q)=(3,2)` against `(3,2)`: a labelled value is its value.
  if (reference.kind === 'relation' && prediction.kind !== 'relation') {
    const value = labelledValue(reference);
    if (value !== null) return compareAnswers(prediction, value, context);
  }
  if (prediction.kind === 'relation' && reference.kind !== 'relation') {
    const value = labelledValue(prediction);
    if (value !== null) return compareAnswers(value, reference, context);
  }
  if (prediction.kind === 'text' || reference.kind === 'text') {
    if (textKey(prediction.source) === textKey(reference.source)) return EQUAL_EXACT;
    // `52` for the base-8 numeral `52_8`: the digits are the answer the question asked for.
    const numeral = /^([0-9A-Fa-f]+)_\d+$/.exec(reference.source);
    return numeral && prediction.source === numeral[1] ? EQUAL_EXACT : DIFFERENT;
  }
  if (prediction.kind === 'unparsed' || reference.kind === 'unparsed') {
    return { outcome: 'undecided', reason: 'parse-error' };
  }
  if (prediction.kind === 'expression' && reference.kind === 'expression') {
    return compareExpressions(prediction.node, reference.node, context);
  }
  if (prediction.kind === 'collection' && reference.kind === 'collection') {
    return compareUnordered(withoutRepeats(prediction.items, reference.items), reference.items, context);
  }
  // One value against a one-item collection (`\{5\}` vs `5`).
  if (prediction.kind === 'collection' && prediction.items.length === 1) {
    return compareAnswers(prediction.items[0]!, reference, context);
  }
  if (reference.kind === 'collection' && reference.items.length === 1) {
    return compareAnswers(prediction, reference.items[0]!, context);
  }
  const entries = { ...context, entries: true };
  const parenthesised = (answer: Answer) =>
    answer.kind === 'tuple' && answer.open === '(' && answer.close === ')' ? answer.items : null;
  if (prediction.kind === 'tuple' && reference.kind === 'tuple') {
    if (prediction.open !== reference.open || prediction.close !== reference.close) return DIFFERENT;
    // The reference decides: an interval reference asks for the interval, an inequality
    // reference accepts the inequality or its interval.
    if (prediction.fromInequality && !reference.fromInequality) return DIFFERENT;
    return compareOrdered(prediction.items, reference.items, entries);
  }
  // `{1,3}` written with bare braces against the pair `(1,3)`: compared as written, in order.
  if (prediction.kind === 'collection' && prediction.source.startsWith('{') && parenthesised(reference)) {
    return compareOrdered(prediction.items, parenthesised(reference)!, entries);
  }
  if (prediction.kind === 'union' && reference.kind === 'union') {
    return compareUnordered(prediction.parts, reference.parts, context);
  }
  if (prediction.kind === 'matrix' && reference.kind === 'matrix') {
    const shape = (rows: Answer[][]) => rows.map((row) => row.length).join('x');
    if (shape(prediction.rows) !== shape(reference.rows)) return DIFFERENT;
    return compareOrdered(prediction.rows.flat(), reference.rows.flat(), entries);
  }
  if (prediction.kind === 'relation' && reference.kind === 'relation') {
    return compareRelations(prediction, reference, context);
  }
  return DIFFERENT;
}

/** One named quantity: `x`, `x_1`, `AB`, `|AB|`, `f(x)`, `\angle ABC`, `V_1`. */
const NAME = String.raw`(?:\\(?:angle|overline|overrightarrow|widehat|triangle|measuredangle|vec)\{?(?:[A-Za-z](?:_(?:\{\w+\}|\w))?'*)+\}?|\|(?:[A-Za-z](?:_(?:\{\w+\}|\w))?'*)+\||(?:[A-Za-z](?:_(?:\{\w+\}|\w))?'*)+|[A-Za-z]\([A-Za-z0-9,]*\))`;
/**
 * A label: a name, a tuple of names `(p,q)`, or a ratio of names `V_1:V_2`, `\frac{AB}{CD}`,
 * `AB/CD` (spaces removed).
 */
const LABEL = new RegExp(
  String.raw`^(?:${NAME}|\(${NAME}(?:,${NAME})+\)|${NAME}(?::${NAME})+|\\frac\{${NAME}\}\{${NAME}\}|${NAME}/${NAME})$`,
);

/**
 * A response's items without repeats written the same way (`(1,2),(2,1),(1,2)`), when the
 * reference lists no item twice: a list of solutions is a set. A reference with a repeat (a
 * double root `1, 1, 2`) keeps the count.
 */
function withoutRepeats(items: Answer[], reference: Answer[]): Answer[] {
  const distinct = (list: Answer[]) => new Set(list.map((item) => item.source)).size === list.length;
  if (distinct(items) || !distinct(reference)) return items;
  const seen = new Set<string>();
  return items.filter((item) => !seen.has(item.source) && seen.add(item.source));
}

/** The value of `label = value` (one `=`, a label on the left), or null. */
function labelledValue(answer: Extract<Answer, { kind: 'relation' }>): Answer | null {
  if (answer.operators.length !== 1 || answer.operators[0] !== '=') return null;
  const [label, value] = answer.sides as [Answer, Answer];
  if (!LABEL.test(label.source)) return null;
  // A ratio of names (`AB:CD`, `\frac{AB}{CD}`, `AB/CD`) labels one number, not a tuple or set.
  const several = value.kind === 'tuple' || value.kind === 'collection' || value.kind === 'union';
  return (several || value.kind === 'matrix') && /^(?:\\frac|[^(]*[:/])/.test(label.source) ? null : value;
}

/**
 * `label = value` items of a list (`x = 2, y = 3`; parsing already reduced each to its value),
 * or null when some item is not one.
 */
function labelledItems(answer: Answer): { label: string; value: Answer }[] | null {
  if (answer.kind !== 'collection' || answer.items.length < 2) return null;
  const parts = splitTopLevel(answer.source, (token) => token === ',' || token === ';');
  const texts = parts?.filter((_, index) => index % 2 === 0) ?? [];
  if (texts.length !== answer.items.length) return null;
  const items: { label: string; value: Answer }[] = [];
  for (const [index, text] of texts.entries()) {
    const equals = text.indexOf('=');
    const label = equals === -1 ? '' : text.slice(0, equals);
    if (!LABEL.test(label)) return null;
    const item = answer.items[index]!;
    const value = item.kind === 'relation' ? labelledValue(item) : item;
    if (value === null) return null;
    items.push({ label, value });
  }
  return items;
}

/** Two lists labelled with the same distinct labels: `[prediction values, reference values]` by label. */
function sameLabels(prediction: Answer, reference: Answer): [Answer[], Answer[]] | null {
  const left = labelledItems(prediction);
  const right = labelledItems(reference);
  if (left === null || right === null || left.length !== right.length) return null;
  const byLabel = new Map(left.map((item) => [item.label, item.value]));
  if (byLabel.size !== left.length || !right.every((item) => byLabel.has(item.label))) return null;
  return [right.map((item) => byLabel.get(item.label)!), right.map((item) => item.value)];
}

/**
 * A labelled list against a pair: `[values, pair items]`, the values in the pair's label order
 * when it has labels (`(x,y) = (2,3)`) and they are the same, else as written. Null otherwise.
 */
function labelledPair(list: Answer, pair: Answer): [Answer[], Answer[]] | null {
  const items = labelledItems(list);
  if (items === null) return null;
  let labels: string[] | null = null;
  let tuple = pair;
  if (pair.kind === 'relation' && labelledValue(pair) !== null) {
    const left = pair.sides[0]!;
    labels = left.kind === 'tuple' ? left.items.map((item) => item.source) : null;
    tuple = labelledValue(pair)!;
  }
  if (tuple.kind !== 'tuple' || tuple.open !== '(' || tuple.close !== ')') return null;
  if (tuple.items.length !== items.length) return null;
  const byLabel = new Map(items.map((item) => [item.label, item.value]));
  const ordered =
    labels?.every((label) => byLabel.has(label)) && byLabel.size === labels.length
      ? labels.map((label) => byLabel.get(label)!)
      : items.map((item) => item.value);
  return [ordered, tuple.items];
}

/** `x > 5` → `(5, \infty)`, `x \le 2` → `(-\infty, 2]` (also `5 < x`); null for other relations. */
function oneSidedInterval(relation: Extract<Answer, { kind: 'relation' }>): Answer | null {
  if (relation.operators.length !== 1) return null;
  const [left, right] = relation.sides as [Answer, Answer];
  const isVariable = (side: Answer) => /^[A-Za-z](?:_\{?\w+\}?)?$/.test(side.source);
  const operator = relation.operators[0]!;
  // As `x OP bound`: a variable on the right mirrors the operator.
  const [variableOperator, bound] = isVariable(left)
    ? [operator, right]
    : isVariable(right)
      ? [FLIPPED[operator], left]
      : [undefined, undefined];
  if (bound === undefined || isVariable(bound)) return null;
  const infinity = (sign: string) => parseAnswer(`${sign}\\infty`);
  switch (variableOperator) {
    case '>':
      return {
        kind: 'tuple',
        source: relation.source,
        open: '(',
        close: ')',
        items: [bound, infinity('')],
        fromInequality: true,
      };
    case '\\ge':
      return {
        kind: 'tuple',
        source: relation.source,
        open: '[',
        close: ')',
        items: [bound, infinity('')],
        fromInequality: true,
      };
    case '<':
      return {
        kind: 'tuple',
        source: relation.source,
        open: '(',
        close: ')',
        items: [infinity('-'), bound],
        fromInequality: true,
      };
    case '\\le':
      return {
        kind: 'tuple',
        source: relation.source,
        open: '(',
        close: ']',
        items: [infinity('-'), bound],
        fromInequality: true,
      };
    default:
      return null;
  }
}

function textKey(source: string): string {
  const bare = source.replace(/^\((.*)\)$/, '$1').replace(/[\s.]/g, '');
  return bare.length > 1 ? bare.toLowerCase() : bare;
}

/** All-equal → structural; the first certain difference → mismatch; else the first undecided. */
async function compareOrdered(left: Answer[], right: Answer[], context: CompareContext): Promise<Decision> {
  if (left.length !== right.length) return DIFFERENT;
  let pending: Decision | null = null;
  for (let index = 0; index < left.length; index++) {
    const decision = await compareAnswers(left[index]!, right[index]!, context);
    if (decision.outcome === 'different') return DIFFERENT;
    pending = worse(pending, decision);
  }
  return pending ?? STRUCTURAL;
}

/**
 * The pending outcome of a composite: an undecided part (a verdict of "not shown equal") wins
 * over an unavailable one, since the whole cannot be equal whatever the outage would have said.
 */
function worse(pending: Decision | null, decision: Decision): Decision | null {
  if (decision.outcome === 'undecided') return pending?.outcome === 'undecided' ? pending : decision;
  if (decision.outcome === 'unavailable') return pending ?? decision;
  return pending;
}

/** A perfect matching between two order-free lists, found by backtracking over memoised pairs. */
async function compareUnordered(left: Answer[], right: Answer[], context: CompareContext): Promise<Decision> {
  if (left.length !== right.length) return DIFFERENT;
  const memo = new Map<string, Decision>();
  const pair = async (i: number, j: number): Promise<Decision> => {
    const key = `${i},${j}`;
    let decision = memo.get(key);
    if (decision === undefined) {
      decision = await compareAnswers(left[i]!, right[j]!, context);
      memo.set(key, decision);
    }
    return decision;
  };
  const used = new Array<boolean>(right.length).fill(false);
  let pending: Decision | null = null;
  const match = async (i: number): Promise<boolean> => {
    if (i === left.length) return true;
    for (let j = 0; j < right.length; j++) {
      if (used[j]) continue;
      const decision = await pair(i, j);
      pending = worse(pending, decision);
      if (decision.outcome !== 'equal') continue;
      used[j] = true;
      if (await match(i + 1)) return true;
      used[j] = false;
    }
    return false;
  };
  if (await match(0)) return STRUCTURAL;
  return pending ?? DIFFERENT;
}

const FLIPPED: Record<string, string> = {
  '<': '>',
  '>': '<',
  '\\le': '\\ge',
  '\\ge': '\\le',
  '=': '=',
  '\\ne': '\\ne',
  '\\approx': '\\approx',
};

async function compareRelations(
  prediction: Extract<Answer, { kind: 'relation' }>,
  reference: Extract<Answer, { kind: 'relation' }>,
  context: CompareContext,
): Promise<Decision> {
  const same = prediction.operators.join(' ') === reference.operators.join(' ');
  const flipped = [...prediction.operators]
    .reverse()
    .map((operator) => FLIPPED[operator])
    .join(' ');
  const candidates: Answer[][] = [];
  if (same) candidates.push(prediction.sides);
  if (flipped === reference.operators.join(' ')) candidates.push([...prediction.sides].reverse());
  // `-x > -1` is `x < 1` (and `1 > x`): both sides negated, each operator mirrored.
  const negated = prediction.sides.map(negateAnswer);
  if (negated.every((side) => side !== null)) {
    const wanted = reference.operators.join(' ');
    const mirrored = prediction.operators.map((operator) => FLIPPED[operator]).join(' ');
    if (mirrored === wanted) candidates.push(negated as Answer[]);
    if ([...prediction.operators].reverse().join(' ') === wanted) {
      candidates.push([...(negated as Answer[])].reverse());
    }
  }
  let unavailable: Decision | null = null;
  for (const sides of candidates) {
    const decision = await compareOrdered(sides, reference.sides, context);
    if (decision.outcome === 'equal') return STRUCTURAL;
    if (decision.outcome === 'unavailable') unavailable = decision;
  }
  // One equation against another: the same solution set when the two differences are proportional.
  const [left1, right1] = prediction.sides;
  const [left2, right2] = reference.sides;
  if (
    prediction.operators.length === 1 &&
    reference.operators.length === 1 &&
    prediction.operators[0] === '=' &&
    reference.operators[0] === '=' &&
    left1?.kind === 'expression' &&
    right1?.kind === 'expression' &&
    left2?.kind === 'expression' &&
    right2?.kind === 'expression'
  ) {
    return symbolicDecision(
      [left1.node, right1.node, left2.node, right2.node],
      (strings, symbols) => ({
        kind: 'equation',
        left: [strings[0]!, strings[1]!],
        right: [strings[2]!, strings[3]!],
        symbols,
      }),
      context,
    );
  }
  return unavailable ?? DIFFERENT;
}

/** `-a` for an expression side (`--a` folds to `a`); null for any other kind. */
function negateAnswer(answer: Answer): Answer | null {
  if (answer.kind !== 'expression') return null;
  const node: MathNode =
    answer.node.type === 'negate' ? answer.node.argument : { type: 'negate', argument: answer.node };
  return { kind: 'expression', source: `-(${answer.source})`, node };
}

/** The leaf rule chain for two expressions. */
async function compareExpressions(
  prediction: MathNode,
  reference: MathNode,
  context: CompareContext,
): Promise<Decision> {
  const exactPrediction = exactValue(prediction);
  const exactReference = exactValue(reference);
  if (exactPrediction.kind === 'overflow' || exactReference.kind === 'overflow') {
    // A value beyond the size guards is never equal to one inside them.
    const other = exactPrediction.kind === 'overflow' ? exactReference : exactPrediction;
    return other.kind === 'value' ? DIFFERENT : { outcome: 'undecided', reason: 'timeout' };
  }
  if (exactPrediction.kind === 'value' && exactReference.kind === 'value') {
    if (equals(exactPrediction.value, exactReference.value)) return EQUAL_EXACT;
    return (
      roundedDecimalRule(
        prediction,
        reference,
        exactPrediction.value,
        exactReference.value,
        minimumDigits(context),
      ) ?? DIFFERENT
    );
  }
  if (sameTree(prediction, reference)) return EQUAL_EXACT;
  const digits = minimumDigits(context);
  const rounded =
    roundedAgainstIrrational(prediction, reference, digits) ??
    roundedAgainstIrrational(reference, prediction, digits);
  if (rounded !== null) return rounded;
  if (floatRejects(prediction, reference)) return DIFFERENT;
  return symbolicDecision(
    [prediction, reference],
    (strings, symbols) => ({
      kind: 'expression',
      left: strings[0]!,
      right: strings[1]!,
      symbols,
    }),
    context,
  );
}

/** Significant digits a rounded decimal needs: 3 for a whole answer, 2 for an entry. */
function minimumDigits(context: CompareContext): number {
  return context.entries === true ? 2 : 3;
}

/** Identical trees (`\\sqrt2` and `\\sqrt{2}` parse the same). */
function sameTree(left: MathNode, right: MathNode): boolean {
  return JSON.stringify(left) === JSON.stringify(right);
}

/** A decimal literal (`0.333`, `-1.25`) and its digits after the point, or null. */
function decimalLiteral(node: MathNode): { text: string; places: number; significant: number } | null {
  const inner = node.type === 'negate' ? node.argument : node;
  if (inner.type !== 'number' || !inner.text.includes('.')) return null;
  const places = inner.text.split('.')[1]!.length;
  const significant = inner.text.replace('.', '').replace(/^0+/, '').length;
  return places === 0 ? null : { text: inner.text, places, significant };
}

const isLiteral = (node: MathNode): boolean =>
  node.type === 'number' || (node.type === 'negate' && node.argument.type === 'number');

/** `0.333` vs `\frac13`: equal when the exact side rounds to the decimal at its precision. */
function roundedDecimalRule(
  prediction: MathNode,
  reference: MathNode,
  a: Rational,
  b: Rational,
  minimum: number,
): Decision | null {
  for (const [decimalSide, otherSide, decimalValue, otherValue] of [
    [prediction, reference, a, b],
    [reference, prediction, b, a],
  ] as const) {
    const decimal = decimalLiteral(decimalSide);
    if (decimal === null || isLiteral(otherSide) || decimal.significant < minimum) continue;
    const difference = subtract(decimalValue, otherValue);
    if (difference === null) continue;
    // |d − v| ≤ ½·10^-places  ⇔  2·|num|·10^places ≤ den
    const magnitude = difference.num < 0n ? -difference.num : difference.num;
    const within = 2n * magnitude * 10n ** BigInt(decimal.places) <= difference.den;
    return within ? { outcome: 'equal', reason: 'numeric' } : DIFFERENT;
  }
  return null;
}

/** `3.1416` vs `\pi`: the decimal side must be what the constant rounds to. */
function roundedAgainstIrrational(
  decimalSide: MathNode,
  otherSide: MathNode,
  minimum: number,
): Decision | null {
  const decimal = decimalLiteral(decimalSide);
  if (decimal === null || decimal.significant < minimum || freeSymbols(otherSide).length > 0) return null;
  const value = floatValue(otherSide, new Map());
  const decimalValue = parseDecimal(decimal.text);
  if (value === null || decimalValue === null) return null;
  const sign = decimalSide.type === 'negate' ? -1 : 1;
  const target = (sign * Number(decimalValue.num)) / Number(decimalValue.den);
  const half = 0.5 * 10 ** -decimal.places;
  const distance = Math.abs(target - value.value);
  if (distance + value.error < half * (1 - 1e-9)) return { outcome: 'equal', reason: 'numeric' };
  if (distance - value.error > half) return DIFFERENT;
  return null;
}

/** Certain difference at a constant point or at any sample point of the symbols. */
function floatRejects(prediction: MathNode, reference: MathNode): boolean {
  if (usesConstant(prediction, 'i') || usesConstant(reference, 'i')) return false;
  const symbols = [...new Set([...freeSymbols(prediction), ...freeSymbols(reference)])];
  const rounds = symbols.length === 0 ? 1 : 3;
  for (let round = 0; round < rounds; round++) {
    const bindings = new Map(
      symbols.map((name, index) => [
        name,
        SAMPLE_POINTS[(index + round) % SAMPLE_POINTS.length]! + index * 0.1,
      ]),
    );
    if (certainlyDifferent(floatValue(prediction, bindings), floatValue(reference, bindings))) return true;
  }
  return false;
}

async function symbolicDecision(
  nodes: MathNode[],
  build: (strings: string[], symbols: string[]) => SymbolicQuery,
  context: CompareContext,
): Promise<Decision> {
  if (context.symbolic === null) return { outcome: 'undecided', reason: 'mismatch' };
  let strings: string[];
  try {
    strings = nodes.map(toSympy);
  } catch {
    return { outcome: 'undecided', reason: 'parse-error' };
  }
  const symbols = [...new Set(nodes.flatMap(freeSymbols))];
  const verdict = await context.symbolic(build(strings, symbols));
  switch (verdict.outcome) {
    case 'equal':
      return { outcome: 'equal', reason: verdict.method };
    case 'different':
      return DIFFERENT;
    case 'unknown':
      return { outcome: 'undecided', reason: 'mismatch' };
    case 'timeout':
      return { outcome: 'undecided', reason: 'timeout' };
    case 'error':
      return { outcome: 'undecided', reason: 'parse-error' };
    case 'unavailable':
      return { outcome: 'unavailable', reason: 'grader-unavailable', cause: verdict.cause };
  }
}
