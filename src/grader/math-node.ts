/**
 * The expression tree the LaTeX parser builds. The grader evaluates it exactly (rationals),
 * approximately (floats with an error bound) and translates it to a SymPy string; it never
 * turns model text into code.
 */

/** Functions the grader understands; anything else is a parse error. */
export const FUNCTION_NAMES = [
  'sqrt',
  'root',
  'sin',
  'cos',
  'tan',
  'cot',
  'sec',
  'csc',
  'asin',
  'acos',
  'atan',
  'sinh',
  'cosh',
  'tanh',
  'log',
  'exp',
  'abs',
  'floor',
  'ceiling',
  'binomial',
] as const;
export type FunctionName = (typeof FUNCTION_NAMES)[number];

export type ConstantName = 'pi' | 'e' | 'i' | 'infinity';

export type MathNode =
  | { type: 'number'; text: string }
  | { type: 'symbol'; name: string }
  | { type: 'constant'; name: ConstantName }
  | { type: 'add'; terms: MathNode[] }
  | { type: 'negate'; argument: MathNode }
  | { type: 'multiply'; factors: MathNode[] }
  | { type: 'divide'; numerator: MathNode; denominator: MathNode }
  | { type: 'power'; base: MathNode; exponent: MathNode }
  | { type: 'factorial'; argument: MathNode; step: 1 | 2 }
  /** `root` takes [radicand, index]; `log` takes [argument] or [argument, base]. */
  | { type: 'call'; name: FunctionName; args: MathNode[] };

/** The names of the free symbols of a tree, sorted. */
export function freeSymbols(node: MathNode): string[] {
  const names = new Set<string>();
  const visit = (current: MathNode): void => {
    switch (current.type) {
      case 'symbol':
        names.add(current.name);
        return;
      case 'number':
      case 'constant':
        return;
      case 'add':
        current.terms.forEach(visit);
        return;
      case 'multiply':
        current.factors.forEach(visit);
        return;
      case 'negate':
      case 'factorial':
        visit(current.argument);
        return;
      case 'divide':
        visit(current.numerator);
        visit(current.denominator);
        return;
      case 'power':
        visit(current.base);
        visit(current.exponent);
        return;
      case 'call':
        current.args.forEach(visit);
        return;
    }
  };
  visit(node);
  return [...names].sort();
}

/** Whether the tree uses a constant (e.g. `i`, `infinity`). */
export function usesConstant(node: MathNode, name: ConstantName): boolean {
  switch (node.type) {
    case 'constant':
      return node.name === name;
    case 'number':
    case 'symbol':
      return false;
    case 'add':
      return node.terms.some((term) => usesConstant(term, name));
    case 'multiply':
      return node.factors.some((factor) => usesConstant(factor, name));
    case 'negate':
    case 'factorial':
      return usesConstant(node.argument, name);
    case 'divide':
      return usesConstant(node.numerator, name) || usesConstant(node.denominator, name);
    case 'power':
      return usesConstant(node.base, name) || usesConstant(node.exponent, name);
    case 'call':
      return node.args.some((arg) => usesConstant(arg, name));
  }
}
