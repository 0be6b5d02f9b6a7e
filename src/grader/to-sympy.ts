/**
 * Translates a MathNode into a SymPy expression string. The output grammar is tiny and
 * fixed: `Integer(n)`, `Rational(p, q)`, whitelisted function names, `pi`, `E`, `I`, `oo`,
 * symbol names `s_<letters/digits/_>`, and `+ - * / ** ( ) ,`. The sandboxed checker
 * re-validates every token against the same whitelist before parsing.
 */
import type { FunctionName, MathNode } from './math-node.ts';
import { parseDecimal } from './rational.ts';

const SYMPY_FUNCTIONS: Record<FunctionName, string> = {
  sqrt: 'sqrt',
  root: 'root',
  sin: 'sin',
  cos: 'cos',
  tan: 'tan',
  cot: 'cot',
  sec: 'sec',
  csc: 'csc',
  asin: 'asin',
  acos: 'acos',
  atan: 'atan',
  sinh: 'sinh',
  cosh: 'cosh',
  tanh: 'tanh',
  log: 'log',
  exp: 'exp',
  abs: 'Abs',
  floor: 'floor',
  ceiling: 'ceiling',
  binomial: 'binomial',
};

/** The Python identifier a symbol gets in the checker (`x` → `s_x`). */
export function sympySymbolName(name: string): string {
  return `s_${name}`;
}

/** The SymPy string for a tree; decimals become exact Rationals. */
export function toSympy(node: MathNode): string {
  switch (node.type) {
    case 'number': {
      const value = parseDecimal(node.text);
      if (value === null) throw new RangeError(`number out of range: ${node.text.slice(0, 20)}`);
      return value.den === 1n ? `Integer(${value.num})` : `Rational(${value.num}, ${value.den})`;
    }
    case 'symbol':
      return sympySymbolName(node.name);
    case 'constant':
      return { pi: 'pi', e: 'E', i: 'I', infinity: 'oo' }[node.name];
    case 'negate':
      return `(-${toSympy(node.argument)})`;
    case 'add':
      return `(${node.terms.map(toSympy).join(' + ')})`;
    case 'multiply':
      return `(${node.factors.map(toSympy).join('*')})`;
    case 'divide':
      return `(${toSympy(node.numerator)}/${toSympy(node.denominator)})`;
    case 'power':
      return `(${toSympy(node.base)}**${toSympy(node.exponent)})`;
    case 'factorial':
      return `${node.step === 2 ? 'factorial2' : 'factorial'}(${toSympy(node.argument)})`;
    case 'call':
      return `${SYMPY_FUNCTIONS[node.name]}(${node.args.map(toSympy).join(', ')})`;
  }
}
