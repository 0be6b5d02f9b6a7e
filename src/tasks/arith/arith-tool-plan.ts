/**
 * What a tool-augmented solution says around its code, per kind: a short lead-in, one or two
 * lines of Python that print the answer, and a conclusion that names what the interpreter
 * printed without quoting it: the boxed answer is then the only copy of the output, and every
 * digit a model copies is one more chance to get one wrong. Pure data; running the code and
 * rendering its output is arith-tool-solution.ts. The code names the problem's numbers in the
 * order the problem states them (`a, b, c = 8, -3, 619`) before computing, so each is copied
 * in reading order, with no digits in names.
 *
 * A spaced-level problem (`12 345`) has two programs: the literal copy of its numbers, which
 * Python rejects (SyntaxError), and the same program with the groups joined by `_`
 * (`12_345`, a valid literal), which prints the answer. `firstAttempt` is the failing copy and
 * the sentence a solution says after its error; `directLead` is the lead of a solution that
 * writes `_` from the start.
 */
import { groupDigits } from './arith-digit-groups.ts';
import type { ArithSpec } from './arith-spec.ts';

export type ArithToolPlan = {
  /** Reasoning before the code block. */
  lead: string;
  /** Python that prints the answer alone on one line. */
  code: string;
  /** Reasoning after the interpreter output (no numbers: the boxed answer quotes the output). */
  conclusion: string;
  /** Spaced problems only: the program that copies the numbers as written, and what follows its error. */
  firstAttempt?: { code: string; fix: string };
  /** Spaced problems only: the lead of a solution whose first program is already right. */
  directLead?: string;
};

/** How a program writes one number. */
type Literal = (value: bigint) => string;

const FIX = 'Python does not read digit groups split by spaces; join them with _ instead.';
const DIRECT = 'Join the digit groups with _, which Python reads.';

/** The plan for one problem. */
export function arithToolPlan(spec: ArithSpec): ArithToolPlan {
  if (spec.notation !== 'spaced') return planWith(spec, String);
  const plan = planWith(spec, (value) => groupDigits(value, '_'));
  return {
    ...plan,
    firstAttempt: { code: planWith(spec, (value) => groupDigits(value, ' ')).code, fix: FIX },
    directLead: `${plan.lead} ${DIRECT}`,
  };
}

function planWith(spec: ArithSpec, n: Literal): ArithToolPlan {
  switch (spec.kind) {
    case 'product':
      return {
        lead: 'Multiply exactly in Python.',
        code: `print(${n(spec.a)} * ${n(spec.b)})`,
        conclusion: 'The interpreter printed the product.',
      };
    case 'sum':
      return {
        lead: 'Add the numbers in Python.',
        code: `print(${spec.terms.map(n).join(' + ')})`,
        conclusion: 'The interpreter printed the sum.',
      };
    case 'mod-power':
      return {
        lead: 'Use modular exponentiation.',
        code: `print(pow(${n(spec.base)}, ${n(spec.exponent)}, ${n(spec.modulus)}))`,
        conclusion: 'The interpreter printed the remainder.',
      };
    case 'power-digit-sum':
      return {
        lead: 'Compute the power exactly and add its digits.',
        code: `print(sum(int(d) for d in str(${n(spec.base)}**${n(spec.exponent)})))`,
        conclusion: 'The interpreter printed the digit sum.',
      };
    case 'gcd':
      return {
        lead: 'Use math.gcd.',
        code: `import math\nprint(math.gcd(${n(spec.a)}, ${n(spec.b)}))`,
        conclusion: 'The interpreter printed the gcd.',
      };
    case 'lcm':
      return {
        lead: 'Use math.lcm.',
        code: `import math\nprint(math.lcm(${n(spec.a)}, ${n(spec.b)}))`,
        conclusion: 'The interpreter printed the lcm.',
      };
    case 'linear-equation':
      return {
        lead: 'x = (c - b) / a; compute it exactly.',
        code: `from fractions import Fraction\na, b, c = ${n(spec.a)}, ${n(spec.b)}, ${n(spec.c)}\nprint(Fraction(c - b, a))`,
        conclusion: 'The interpreter printed x.',
      };
    case 'linear-system':
      return {
        lead: "By Cramer's rule, x = (c*e - b*f) / (a*e - b*d).",
        code:
          'from fractions import Fraction\n' +
          `a, b, c, d, e, f = ${n(spec.a1)}, ${n(spec.b1)}, ${n(spec.c1)}, ${n(spec.a2)}, ${n(spec.b2)}, ${n(spec.c2)}\n` +
          'print(Fraction(c*e - b*f, a*e - b*d))',
        conclusion: 'The interpreter printed x.',
      };
  }
}
