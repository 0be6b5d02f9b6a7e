/**
 * The differential corpus: (prediction, reference) pairs generated from benchmark reference
 * answers, to be graded by our grader and by an independent verifier (Math-Verify) and
 * compared. Each reference yields equivalent rewritings (boxes, answer phrases, prose around
 * the answer, spacing, LaTeX spellings, labels, the order of an unordered list, several boxes,
 * decimals for fractions, inequalities for intervals, `<think>` responses whose last answer
 * counts, a matrix computation ending in the answer, `;` in a tuple, solutions as math joined by
 * `and`, repeated or labelled `x_{1}=…`, a value labelled `\frac{AB}{CD}=`) and near misses (one
 * digit, a sign, the order of a tuple, a missing solution, a matrix computation ending in
 * another matrix).
 * `intended` is what the rewriting was built to be; the verdict that counts in the comparison
 * is the verifier's. Deterministic: the only choice (which digit) is taken from the text.
 * It does not read files: callers hand it the references (read by path, never copied).
 */

export type DifferentialPair = {
  /** `<reference id>/<kind>`: unique within one corpus. */
  id: string;
  kind: string;
  prediction: string;
  reference: string;
  /** What the rewriting was built to be: an equivalent answer or a near miss. */
  intended: 'equivalent' | 'near-miss';
};

export type ReferenceAnswer = { id: string; answer: string };

/** `build` gives the prediction (null: not applicable); `reference`, when given, rewrites the reference too. */
type Rewriting = {
  kind: string;
  intended: DifferentialPair['intended'];
  build: (answer: string) => string | null;
  reference?: (answer: string) => string;
};

/** A label letter that does not occur in the answer (`k = 45`). */
function labelFor(answer: string): string {
  return ['k', 'N', 'm', 'T', 'y'].find((letter) => !answer.includes(letter)) ?? 'Q';
}
/** A list `a, b` (not a tuple, set or matrix, and not one number with thousands separators). */
const isList = (answer: string) =>
  topLevelItems(answer) !== null &&
  !/^\s*[([\\]/.test(answer) &&
  !/^\d{1,3}(?:,(?:\\!)?\s*\d{3})+$/.test(answer.trim());
/** The items of a list or of a set `\{…\}` (order-free solutions), or null. */
function solutionItems(answer: string): string[] | null {
  if (isList(answer)) return topLevelItems(answer);
  const set = /^\s*\\\{(.*)\\\}\s*$/s.exec(answer);
  return set === null ? null : topLevelItems(set[1]!);
}
const isIntegerRatio = (answer: string) => /^\s*\\[dt]?frac\{\d+\}\{\d+\}\s*$/.test(answer);

/** Top-level comma-separated items (outside brackets and braces), or null for one item. */
function topLevelItems(answer: string): string[] | null {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < answer.length; index++) {
    const character = answer[index];
    if (character === '{' || character === '(' || character === '[') depth++;
    else if (character === '}' || character === ')' || character === ']') depth--;
    else if (character === ',' && depth === 0 && !/^\\!/.test(answer.slice(index + 1))) {
      items.push(answer.slice(start, index).trim());
      start = index + 1;
    }
  }
  items.push(answer.slice(start).trim());
  return items.length > 1 && items.every((item) => item !== '') ? items : null;
}

/** `(a, b, c)` with two or more items (an ordered tuple, not an interval with `[` or `]`). */
function tupleItems(answer: string): string[] | null {
  const match = /^\s*(?:\\left\s*)?\((.*?)(?:\\right\s*)?\)\s*$/s.exec(answer);
  if (match === null) return null;
  const items = topLevelItems(match[1]!);
  return items !== null && new Set(items).size === items.length ? items : null;
}

const isPlainNumber = (answer: string) => /^-?\d+(?:\.\d+)?$/.test(answer.trim());
/** A single value: no list, relation, text, set, interval or matrix. */
const isSingleValue = (answer: string) =>
  topLevelItems(answer) === null &&
  !/[=<>]|\\(?:text|mbox|begin|le|ge|in|cup|pm|\{)(?![a-z])|^\s*[([]/.test(answer);
/** `\frac{p}{q}` with a terminating decimal expansion, as that decimal. */
function fractionAsDecimal(answer: string): string | null {
  const match = /^\s*(-?)\\[dt]?frac\{(\d+)\}\{(\d+)\}\s*$/.exec(answer);
  if (match === null) return null;
  const [, sign, numerator, denominator] = match as unknown as [string, string, string, string];
  let rest = Number(denominator);
  for (const factor of [2, 5]) while (rest % factor === 0) rest /= factor;
  if (rest !== 1 || Number(denominator) === 0) return null;
  const value = Number(numerator) / Number(denominator);
  const text = String(value);
  return /e/.test(text) || text.replace(/^\d*\./, '').length > 6 ? null : `${sign}${text}`;
}

/** `(a, b]` → `a < x \le b`; `(-\infty, b)` → `x < b`; `[a, \infty)` → `x \ge a`. */
function intervalAsInequality(answer: string): string | null {
  const match = /^\s*(?:x\s*\\in\s*)?(?:\\left\s*)?([([])(.*?)(?:\\right\s*)?([)\]])\s*$/s.exec(answer);
  if (match === null) return null;
  const [, open, inner, close] = match as unknown as [string, string, string, string];
  const items = topLevelItems(inner);
  if (items === null || items.length !== 2) return null;
  const [low, high] = items as [string, string];
  const lowOperator = open === '(' ? '<' : '\\le';
  const highOperator = close === ')' ? '<' : '\\le';
  const lowInfinite = /^-\s*\\infty$/.test(low);
  const highInfinite = /^\+?\s*\\infty$/.test(high);
  if (lowInfinite && highInfinite) return null;
  if (lowInfinite) return `x ${highOperator} ${high}`;
  if (highInfinite) return `x ${lowOperator === '<' ? '>' : '\\ge'} ${low}`;
  return `${low} ${lowOperator} x ${highOperator} ${high}`;
}

/** The last digit of the answer (outside `_base` subscripts) raised by one, modulo 10. */
function changeOneDigit(answer: string): string | null {
  const base = /_\{?\d+\}?\s*$/.exec(answer);
  const body = base === null ? answer : answer.slice(0, base.index);
  for (let index = body.length - 1; index >= 0; index--) {
    const character = body[index]!;
    if (character < '0' || character > '9') continue;
    // Not an exponent or subscript digit (`x^5`), and not a base of a numeral.
    if (/[\^_]$/.test(body.slice(0, index))) continue;
    const digit = (Number(character) + 1) % 10;
    // `10` → `11`, never a leading zero that reads as the same number.
    if (digit === 0 && (index === 0 || !/\d/.test(body[index - 1]!))) continue;
    return `${body.slice(0, index)}${digit}${body.slice(index + 1)}${base?.[0] ?? ''}`;
  }
  return null;
}

/** The zero matrix of a `pmatrix` answer's shape, or null for any other answer. */
function zeroMatrix(answer: string): string | null {
  const match = /^\s*\\begin\{pmatrix\}(.*)\\end\{pmatrix\}\s*$/s.exec(answer);
  if (match === null) return null;
  const rows = match[1]!.split('\\\\').filter((row) => row.trim() !== '');
  return `\\begin{pmatrix} ${rows
    .map((row) =>
      row
        .split('&')
        .map(() => '0')
        .join(' & '),
    )
    .join(' \\\\ ')} \\end{pmatrix}`;
}

const REWRITINGS: Rewriting[] = [
  {
    kind: 'boxed-sentence',
    intended: 'equivalent',
    build: (answer) => `So the answer is $\\boxed{${answer}}$.`,
  },
  {
    kind: 'final-answer-phrase',
    intended: 'equivalent',
    build: (answer) => `The final answer is $${answer}$.`,
  },
  {
    kind: 'prose-display',
    intended: 'equivalent',
    build: (answer) =>
      `Combining the two cases above, we conclude that\n\\[\n\\boxed{${answer}}\n\\]\nas required.`,
  },
  {
    kind: 'spacing',
    intended: 'equivalent',
    build: (answer) => {
      const squeezed = answer.replace(/\s+/g, '');
      const spread = squeezed.replace(/([,=+])/g, ' $1 ');
      const rewritten = squeezed === answer ? spread : squeezed;
      return /\\[A-Za-z]+\s+[A-Za-z]/.test(answer) || rewritten === answer ? null : `$\\boxed{${rewritten}}$`;
    },
  },
  {
    kind: 'latex-spelling',
    intended: 'equivalent',
    build: (answer) => {
      const rewritten = answer
        .replace(/\\frac(?![A-Za-z])/g, '\\dfrac')
        .replace(/\\left\s*|\\right\s*/g, '')
        .replace(/\\le(?![A-Za-z])/g, '\\leq')
        .replace(/\\ge(?![A-Za-z])/g, '\\geq')
        .replace(/\\!/g, '');
      return rewritten === answer ? null : `\\boxed{${rewritten}}`;
    },
  },
  {
    kind: 'think-response',
    intended: 'equivalent',
    build: (answer) =>
      `<think>\nLet me try a first approach. I get $x = 3$, so maybe the answer is 17... no, that ignores a case.\nRecomputing carefully gives the value below.\n</think>\n\nAfter checking every case, the answer is $\\boxed{${answer}}$.`,
  },
  {
    kind: 'label',
    intended: 'equivalent',
    build: (answer) =>
      isSingleValue(answer) && !/^\s*[a-z]\s*=/.test(answer) ? `$\\boxed{x = ${answer}}$` : null,
  },
  {
    kind: 'decimal',
    intended: 'equivalent',
    build: (answer) => {
      const decimal = fractionAsDecimal(answer);
      return decimal === null ? null : `The answer is $\\boxed{${decimal}}$.`;
    },
  },
  {
    kind: 'thousands',
    intended: 'equivalent',
    build: (answer) =>
      /^\d{4,}$/.test(answer.trim()) ? `\\boxed{${answer.trim().replace(/\B(?=(\d{3})+$)/g, ',')}}` : null,
  },
  {
    kind: 'list-reordered',
    intended: 'equivalent',
    build: (answer) => {
      const items = solutionItems(answer);
      if (items === null) return null;
      const set = /^\s*\\\{/.test(answer);
      const reversed = [...items].reverse().join(', ');
      return `$\\boxed{${set ? `\\{${reversed}\\}` : reversed}}$`;
    },
  },
  {
    kind: 'several-boxes',
    intended: 'equivalent',
    build: (answer) => {
      const items = isList(answer) ? topLevelItems(answer) : null;
      if (items === null) return null;
      return `The solutions are ${items.map((item) => `$\\boxed{${item}}$`).join(' and ')}.`;
    },
  },
  {
    kind: 'inequality',
    intended: 'equivalent',
    build: (answer) => {
      const inequality = /\\cup/.test(answer) ? null : intervalAsInequality(answer);
      return inequality === null ? null : `$\\boxed{${inequality}}$`;
    },
  },
  {
    kind: 'plain-sentence',
    intended: 'equivalent',
    build: (answer) =>
      isPlainNumber(answer) ? `Adding the three counts, the answer is ${answer.trim()}.` : null,
  },
  {
    kind: 'minerva',
    intended: 'equivalent',
    build: (answer) => `Final Answer: The final answer is $${answer}$. I hope it is correct.`,
  },
  { kind: 'markdown-answer', intended: 'equivalent', build: (answer) => `**Answer:** $${answer}$` },
  {
    kind: 'slash-fraction',
    intended: 'equivalent',
    build: (answer) => {
      const rewritten = answer.replace(/\\[dt]?frac\{(-?\d+)\}\{(\d+)\}/g, '$1/$2');
      return rewritten === answer ? null : `$\\boxed{${rewritten}}$`;
    },
  },
  {
    kind: 'unicode',
    intended: 'equivalent',
    build: (answer) => {
      const rewritten = answer
        .replace(/\\pi(?![A-Za-z])\s*/g, 'π')
        .replace(/\^\\circ/g, '°')
        .replace(/\\infty(?![A-Za-z])/g, '∞')
        .replace(/\\le(?![A-Za-z])/g, '≤');
      return rewritten === answer ? null : `The answer is $${rewritten}$.`;
    },
  },
  {
    kind: 'without-degrees',
    intended: 'equivalent',
    build: (answer) =>
      /^\s*\d+\s*\^\\circ\s*$/.test(answer) ? `\\boxed{${answer.replace(/\^\\circ/, '').trim()}}` : null,
  },
  {
    kind: 'interval-membership',
    intended: 'equivalent',
    build: (answer) =>
      /^\s*(?:\\left)?[([].*[)\]]\s*$/.test(answer) && intervalAsInequality(answer) !== null
        ? `$\\boxed{x \\in ${answer}}$`
        : null,
  },
  {
    kind: 'percent',
    intended: 'equivalent',
    build: (answer) => (/^\s*\d+\s*$/.test(answer) ? `The share is $\\boxed{${answer.trim()}\\%}$.` : null),
  },
  {
    kind: 'degrees-written',
    intended: 'equivalent',
    build: (answer) => {
      const match = /^\s*(\d+)\s*\^\\circ\s*$/.exec(answer);
      return match === null ? null : `The angle is $\\boxed{${match[1]} \\text{ degrees}}$.`;
    },
  },
  {
    kind: 'text-unwrapped',
    intended: 'equivalent',
    build: (answer) => {
      const match = /^\s*\\text\{\(?([A-Za-z]+)\)?\}\s*$/.exec(answer);
      return match === null ? null : `The answer is $\\boxed{${match[1]}}$.`;
    },
  },
  {
    kind: 'separators-removed',
    intended: 'equivalent',
    build: (answer) => {
      const rewritten = answer.replace(/\\\$/g, '').replace(/,\\!\s*/g, '');
      return rewritten === answer || !/^\s*[\d.]+\s*$/.test(rewritten)
        ? null
        : `$\\boxed{${rewritten.trim()}}$`;
    },
  },
  {
    kind: 'set-braces',
    intended: 'equivalent',
    build: (answer) => (isList(answer) ? `$\\boxed{\\{${topLevelItems(answer)!.join(', ')}\\}}$` : null),
  },
  {
    kind: 'pm-expanded',
    intended: 'equivalent',
    build: (answer) => {
      if (!/^[^,]*\\pm[^,]*$/.test(answer) || /^\s*\\\{/.test(answer)) return null;
      const plus = answer.replace(/\\pm/, '+');
      const minus = answer.replace(/\\pm/, '-');
      return `The roots are $\\boxed{${plus}, ${minus}}$.`;
    },
  },
  {
    kind: 'bmatrix',
    intended: 'equivalent',
    build: (answer) =>
      /\\begin\{pmatrix\}/.test(answer) ? `$\\boxed{${answer.replace(/pmatrix/g, 'bmatrix')}}$` : null,
  },
  {
    kind: 'labelled-reference',
    intended: 'equivalent',
    build: (answer) => (isSingleValue(answer) ? `So the answer is $\\boxed{${answer}}$.` : null),
    reference: (answer) => `${labelFor(answer)} = ${answer}`,
  },
  {
    kind: 'labelled-both',
    intended: 'equivalent',
    build: (answer) => (isSingleValue(answer) ? `$\\boxed{${labelFor(answer)}=${answer}}$` : null),
    reference: (answer) => `${labelFor(answer)} = ${answer}`,
  },
  {
    kind: 'labelled-tuple',
    intended: 'equivalent',
    build: (answer) => (tupleItems(answer) === null ? null : `The pair is $\\boxed{${answer}}$.`),
    reference: (answer) =>
      `(${(tupleItems(answer) ?? []).map((_, index) => `x_${index + 1}`).join(', ')}) = ${answer}`,
  },
  {
    kind: 'labelled-list',
    intended: 'equivalent',
    build: (answer) => (isList(answer) ? `$\\boxed{${answer}}$` : null),
    reference: (answer) =>
      (topLevelItems(answer) ?? []).map((item, index) => `x_${index + 1} = ${item}`).join(', '),
  },
  {
    kind: 'boxes-quad-and',
    intended: 'equivalent',
    build: (answer) =>
      isList(answer)
        ? `$\\boxed{${topLevelItems(answer)!.join('} \\quad \\text{and} \\quad \\boxed{')}}$`
        : null,
  },
  {
    kind: 'list-words',
    intended: 'equivalent',
    build: (answer) =>
      isList(answer) ? `$\\boxed{${topLevelItems(answer)!.join(' \\text{ or } ')}}$` : null,
  },
  {
    kind: 'list-semicolons',
    intended: 'equivalent',
    build: (answer) => (isList(answer) ? `\\boxed{${topLevelItems(answer)!.join('; ')}}` : null),
  },
  {
    kind: 'unit-in-box',
    intended: 'equivalent',
    build: (answer) =>
      /^\s*\d+\s*$/.test(answer) ? `The length is $\\boxed{${answer.trim()} \\text{ cm}}$.` : null,
  },
  {
    kind: 'ratio',
    intended: 'equivalent',
    build: (answer) => {
      if (!isIntegerRatio(answer)) return null;
      const [numerator, denominator] = answer.match(/\d+/g)!;
      return `The ratio is $\\boxed{${numerator}:${denominator}}$.`;
    },
  },
  {
    kind: 'labelled-ratio',
    intended: 'equivalent',
    build: (answer) => {
      if (!isIntegerRatio(answer)) return null;
      const [numerator, denominator] = answer.match(/\d+/g)!;
      return `$\\boxed{${numerator}:${denominator}}$`;
    },
    reference: (answer) => {
      const [numerator, denominator] = answer.match(/\d+/g) ?? [];
      return `V_1:V_2=${numerator}:${denominator}`;
    },
  },
  {
    kind: 'think-phrase',
    intended: 'equivalent',
    build: (answer) =>
      `<think>\nTrying $n = 3$ gives 17, which is too large, so the count must be smaller.\n</think>\nThe final answer is $${answer}$.`,
  },
  {
    kind: 'matrix-computation',
    intended: 'equivalent',
    build: (answer) => {
      const zero = zeroMatrix(answer);
      return zero === null
        ? null
        : `Adding the zero matrix changes nothing:\n$$${zero} + ${answer.trim()} = ${answer.trim()}$$`;
    },
  },
  {
    kind: 'tuple-semicolons',
    intended: 'equivalent',
    build: (answer) => {
      const items = /\\cup/.test(answer) ? null : tupleItems(answer);
      return items === null ? null : `$\\boxed{(${items.join('; ')})}$`;
    },
  },
  {
    kind: 'math-words',
    intended: 'equivalent',
    build: (answer) =>
      isList(answer)
        ? `The solutions are ${topLevelItems(answer)!
            .map((item) => `$${item}$`)
            .join(' and ')}.`
        : null,
  },
  {
    kind: 'repeated-solution',
    intended: 'equivalent',
    build: (answer) => {
      const items = isList(answer) ? topLevelItems(answer)! : null;
      return items === null || new Set(items).size !== items.length
        ? null
        : `$\\boxed{${[...items, items[0]!].join(', ')}}$`;
    },
  },
  {
    kind: 'labelled-roots',
    intended: 'equivalent',
    build: (answer) =>
      isList(answer)
        ? `Hence $${topLevelItems(answer)!
            .map((item, index) => `x_{${index + 1}}=${item}`)
            .join(',\\quad ')}$.`
        : null,
  },
  {
    kind: 'fraction-label',
    intended: 'equivalent',
    // A ratio labels one number: not an interval or point written with `\left(`.
    build: (answer) =>
      isSingleValue(answer) && !/^\s*\\left\s*[([]/.test(answer)
        ? `$\\boxed{\\frac{AB}{CD}=${answer}}$`
        : null,
  },
  {
    kind: 'labelled-one-digit',
    intended: 'near-miss',
    build: (answer) => {
      const changed = isSingleValue(answer) ? changeOneDigit(answer) : null;
      return changed === null ? null : `So the answer is $\\boxed{${changed}}$.`;
    },
    reference: (answer) => `${labelFor(answer)} = ${answer}`,
  },
  {
    kind: 'boxes-missing-one',
    intended: 'near-miss',
    build: (answer) =>
      isList(answer) ? `$\\boxed{${topLevelItems(answer)!.slice(0, -1).join('}$ and $\\boxed{')}}$` : null,
  },
  {
    kind: 'reciprocal',
    intended: 'near-miss',
    build: (answer) => {
      const match = /^\s*\\[dt]?frac\{(\d+)\}\{(\d+)\}\s*$/.exec(answer);
      if (match === null || match[1] === match[2]) return null;
      return `So the answer is $\\boxed{\\frac{${match[2]}}{${match[1]}}}$.`;
    },
  },
  {
    kind: 'missing-factor',
    intended: 'near-miss',
    build: (answer) => {
      const match = /^\s*(\d+)\s*\\pi\s*$|^\s*(\d+)\s*\\sqrt\{?\d+\}?\s*$/.exec(answer);
      return match === null ? null : `The answer is $\\boxed{${match[1] ?? match[2]}}$.`;
    },
  },
  {
    kind: 'bracket-swap',
    intended: 'near-miss',
    build: (answer) => {
      const match = /^(\s*(?:\\left\s*)?)([([])(.*?)((?:\\right\s*)?)([)\]])(\s*)$/s.exec(answer);
      if (match === null || intervalAsInequality(answer) === null || /\\infty/.test(match[3]!)) return null;
      const open = match[2] === '(' ? '[' : '(';
      return `$\\boxed{${match[1]}${open}${match[3]}${match[4]}${match[5]}${match[6]}}$`;
    },
  },
  {
    kind: 'wrong-choice',
    intended: 'near-miss',
    build: (answer) => {
      const match = /^\s*\\text\{\(([A-D])\)\}\s*$/.exec(answer);
      return match === null
        ? null
        : `The answer is $\\boxed{\\text{(${String.fromCharCode(match[1]!.charCodeAt(0) + 1)})}}$.`;
    },
  },
  {
    kind: 'extra-solution',
    intended: 'near-miss',
    build: (answer) => (isList(answer) ? `$\\boxed{${answer}, 0}$` : null),
  },
  {
    kind: 'one-digit',
    intended: 'near-miss',
    build: (answer) => {
      const changed = changeOneDigit(answer);
      return changed === null ? null : `So the answer is $\\boxed{${changed}}$.`;
    },
  },
  {
    kind: 'sign',
    intended: 'near-miss',
    build: (answer) => {
      if (!isSingleValue(answer) || /^\s*0+(?:\.0+)?\s*$/.test(answer) || /_\{?\d+\}?\s*$/.test(answer))
        return null;
      if (!/\d|\\pi|[a-z]/.test(answer)) return null;
      const trimmed = answer.trim();
      const negated = trimmed.startsWith('-')
        ? trimmed.slice(1).trim()
        : isPlainNumber(trimmed) || /^\\[dt]?frac\{[^{}]*\}\{[^{}]*\}$|^\\sqrt\{[^{}]*\}$/.test(trimmed)
          ? `-${trimmed}`
          : `-\\left(${trimmed}\\right)`;
      // The negation of an expression that starts with a minus sign is not the same text less it.
      if (trimmed.startsWith('-') && /[+-]/.test(negated)) return null;
      return `The final answer is $\\boxed{${negated}}$.`;
    },
  },
  {
    kind: 'tuple-order',
    intended: 'near-miss',
    build: (answer) => {
      const items = tupleItems(answer);
      if (items === null) return null;
      const swapped = [items[1]!, items[0]!, ...items.slice(2)];
      return `The point is $\\boxed{(${swapped.join(', ')})}$.`;
    },
  },
  {
    kind: 'matrix-computation-wrong',
    intended: 'near-miss',
    build: (answer) => {
      const zero = zeroMatrix(answer);
      const changed = zero === null ? null : changeOneDigit(answer);
      return changed === null
        ? null
        : `Adding the zero matrix:\n$$${zero} + ${answer.trim()} = ${changed.trim()}$$`;
    },
  },
  {
    kind: 'missing-solution',
    intended: 'near-miss',
    build: (answer) => {
      const set = /^\s*\\\{/.test(answer);
      const items = solutionItems(answer);
      if (items === null) return null;
      const kept = items.slice(0, -1).join(', ');
      return `$\\boxed{${set ? `\\{${kept}\\}` : kept}}$`;
    },
  },
];

/** The corpus for the given references, in reference order then rewriting order. */
export function generateDifferentialCorpus(references: readonly ReferenceAnswer[]): DifferentialPair[] {
  const pairs: DifferentialPair[] = [];
  for (const { id, answer } of references) {
    for (const { kind, intended, build, reference } of REWRITINGS) {
      const prediction = build(answer);
      if (prediction === null) continue;
      pairs.push({
        id: `${id}/${kind}`,
        kind,
        prediction,
        reference: reference?.(answer) ?? answer,
        intended,
      });
    }
  }
  return pairs;
}

/** The rewriting kinds, in order. */
export const DIFFERENTIAL_KINDS: readonly string[] = REWRITINGS.map(({ kind }) => kind);
