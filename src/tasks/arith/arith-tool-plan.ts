/**
 * What a tool-augmented solution says around its code, per kind: a short lead-in, one or two
 * lines of Python that print the answer, and a conclusion that names what the interpreter
 * printed without quoting it: the boxed answer is then the only copy of the output, and every
 * digit a model copies is one more chance to get one wrong. Pure data; running the code and
 * rendering its output is arith-tool-solution.ts. The code names the problem's numbers in the
 * order the problem states them (`a, b, c = 8, -3, 619`) before computing, so each is copied
 * in reading order, with no digits in names.
 */
import type { ArithSpec } from './arith-spec.ts';

export type ArithToolPlan = {
  /** Reasoning before the code block. */
  lead: string;
  /** Python that prints the answer alone on one line. */
  code: string;
  /** Reasoning after the interpreter output (no numbers: the boxed answer quotes the output). */
  conclusion: string;
};

/** The plan for one problem. */
export function arithToolPlan(spec: ArithSpec): ArithToolPlan {
  switch (spec.kind) {
    case 'product':
      return {
        lead: 'Multiply exactly in Python.',
        code: `print(${spec.a} * ${spec.b})`,
        conclusion: 'The interpreter printed the product.',
      };
    case 'sum':
      return {
        lead: 'Add the numbers in Python.',
        code: `print(${spec.terms.join(' + ')})`,
        conclusion: 'The interpreter printed the sum.',
      };
    case 'mod-power':
      return {
        lead: 'Use modular exponentiation.',
        code: `print(pow(${spec.base}, ${spec.exponent}, ${spec.modulus}))`,
        conclusion: 'The interpreter printed the remainder.',
      };
    case 'power-digit-sum':
      return {
        lead: 'Compute the power exactly and add its digits.',
        code: `print(sum(int(d) for d in str(${spec.base}**${spec.exponent})))`,
        conclusion: 'The interpreter printed the digit sum.',
      };
    case 'gcd':
      return {
        lead: 'Use math.gcd.',
        code: `import math\nprint(math.gcd(${spec.a}, ${spec.b}))`,
        conclusion: 'The interpreter printed the gcd.',
      };
    case 'lcm':
      return {
        lead: 'Use math.lcm.',
        code: `import math\nprint(math.lcm(${spec.a}, ${spec.b}))`,
        conclusion: 'The interpreter printed the lcm.',
      };
    case 'linear-equation':
      return {
        lead: 'x = (c - b) / a; compute it exactly.',
        code: `from fractions import Fraction\na, b, c = ${spec.a}, ${spec.b}, ${spec.c}\nprint(Fraction(c - b, a))`,
        conclusion: 'The interpreter printed x.',
      };
    case 'linear-system':
      return {
        lead: "By Cramer's rule, x = (c*e - b*f) / (a*e - b*d).",
        code:
          'from fractions import Fraction\n' +
          `a, b, c, d, e, f = ${spec.a1}, ${spec.b1}, ${spec.c1}, ${spec.a2}, ${spec.b2}, ${spec.c2}\n` +
          'print(Fraction(c*e - b*f, a*e - b*d))',
        conclusion: 'The interpreter printed x.',
      };
  }
}
