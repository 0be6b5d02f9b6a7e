/**
 * A small recursive-descent parser from normalised LaTeX (one expression, no relations or
 * lists) to a MathNode tree. It covers what final answers use: numbers, single-letter and
 * Greek symbols, + - · × / ÷, implicit multiplication, powers, factorials, \frac, \sqrt,
 * \binom, |x|, floor/ceiling and the common functions. Anything else is a parse failure,
 * never a guess. Depth and length are bounded so hostile input fails fast.
 */
import type { FunctionName, MathNode } from './math-node.ts';

export type ParseResult = { ok: true; node: MathNode } | { ok: false; error: string };

const MAX_DEPTH = 100;

type Token = { kind: 'number' | 'letter' | 'command' | 'char'; text: string };

const GREEK = new Set(
  'alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi rho sigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Sigma Phi Psi Omega'.split(
    ' ',
  ),
);

const COMMAND_FUNCTIONS: Record<string, FunctionName> = {
  sin: 'sin',
  cos: 'cos',
  tan: 'tan',
  cot: 'cot',
  sec: 'sec',
  csc: 'csc',
  arcsin: 'asin',
  arccos: 'acos',
  arctan: 'atan',
  sinh: 'sinh',
  cosh: 'cosh',
  tanh: 'tanh',
  log: 'log',
  ln: 'log',
  exp: 'exp',
};

/** Letter runs written without a backslash that still name a function or constant. */
const PLAIN_WORDS = new Set(['sin', 'cos', 'tan', 'cot', 'sec', 'csc', 'log', 'ln', 'exp', 'sqrt', 'pi']);

class ParseFailure extends Error {}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  while (index < text.length) {
    const character = text[index]!;
    if (character === ' ' || character === '\t' || character === '\n') {
      index++;
    } else if (/[0-9.]/.test(character)) {
      const match = /^(?:\d+\.?\d*|\.\d+)/.exec(text.slice(index, index + 400));
      if (!match) throw new ParseFailure(`unexpected "${character}"`);
      tokens.push({ kind: 'number', text: match[0] });
      index += match[0].length;
    } else if (/[A-Za-z]/.test(character)) {
      const run = /^[A-Za-z]+/.exec(text.slice(index, index + 40))![0];
      if (PLAIN_WORDS.has(run)) {
        tokens.push({ kind: 'command', text: run });
        index += run.length;
      } else {
        tokens.push({ kind: 'letter', text: character });
        index++;
      }
    } else if (character === '\\') {
      const match = /^\\(?:[A-Za-z]+|.)/.exec(text.slice(index, index + 40));
      if (!match) throw new ParseFailure('lone backslash');
      tokens.push({ kind: 'command', text: match[0].slice(1) });
      index += match[0].length;
    } else {
      tokens.push({ kind: 'char', text: character });
      index++;
    }
  }
  return tokens;
}

class Parser {
  private position = 0;
  private depth = 0;
  private readonly tokens: Token[];

  constructor(tokens: Token[]) {
    this.tokens = tokens;
  }

  parseAll(): MathNode {
    const node = this.parseAdditive();
    if (this.position < this.tokens.length) throw new ParseFailure(`unexpected "${this.peek()?.text}"`);
    return node;
  }

  private peek(): Token | undefined {
    return this.tokens[this.position];
  }

  private isChar(text: string): boolean {
    const token = this.peek();
    return token !== undefined && token.kind === 'char' && token.text === text;
  }

  private isCommand(...names: string[]): boolean {
    const token = this.peek();
    return token !== undefined && token.kind === 'command' && names.includes(token.text);
  }

  private expectChar(text: string): void {
    if (!this.isChar(text)) throw new ParseFailure(`expected "${text}"`);
    this.position++;
  }

  private enter(): void {
    if (++this.depth > MAX_DEPTH) throw new ParseFailure('nesting too deep');
  }

  private parseAdditive(): MathNode {
    this.enter();
    const terms: MathNode[] = [];
    let negative = false;
    if (this.isChar('+') || this.isChar('-')) {
      negative = this.peek()!.text === '-';
      this.position++;
    }
    for (;;) {
      const term = this.parseTerm();
      terms.push(negative ? { type: 'negate', argument: term } : term);
      if (this.isChar('+') || this.isChar('-')) {
        negative = this.peek()!.text === '-';
        this.position++;
      } else break;
    }
    this.depth--;
    return terms.length === 1 ? terms[0]! : { type: 'add', terms };
  }

  private parseTerm(): MathNode {
    let node = this.parseSignedFactor();
    for (;;) {
      if (this.isChar('*') || this.isCommand('cdot', 'times')) {
        this.position++;
        node = multiply(node, this.parseSignedFactor());
      } else if (this.isChar('/') || this.isCommand('div')) {
        this.position++;
        node = { type: 'divide', numerator: node, denominator: this.parseSignedFactor() };
      } else if (this.startsFactor()) {
        if (this.peek()!.kind === 'number' && this.tokens[this.position - 1]?.kind === 'number') {
          throw new ParseFailure('two numbers side by side');
        }
        node = multiply(node, this.parsePostfix());
      } else return node;
    }
  }

  private parseSignedFactor(): MathNode {
    if (this.isChar('-')) {
      this.position++;
      this.enter();
      const argument = this.parseSignedFactor();
      this.depth--;
      return { type: 'negate', argument };
    }
    if (this.isChar('+')) this.position++;
    return this.parsePostfix();
  }

  private startsFactor(): boolean {
    const token = this.peek();
    if (token === undefined) return false;
    if (token.kind === 'number' || token.kind === 'letter') return true;
    if (token.kind === 'char') return token.text === '(' || token.text === '{';
    return !['cdot', 'times', 'div', 'pm', 'mp', 'rfloor', 'rceil', 'right'].includes(token.text);
  }

  private parsePostfix(): MathNode {
    this.enter();
    let node = this.parsePrimary();
    for (;;) {
      if (this.isChar('^')) {
        this.position++;
        node = { type: 'power', base: node, exponent: this.parseScript() };
      } else if (this.isChar('!')) {
        this.position++;
        const step = this.isChar('!') ? 2 : 1;
        if (step === 2) this.position++;
        node = { type: 'factorial', argument: node, step };
      } else if (this.isChar('_') && node.type === 'symbol') {
        this.position++;
        const script = this.parseScript();
        if (script.type !== 'number' && script.type !== 'symbol') throw new ParseFailure('complex subscript');
        node = {
          type: 'symbol',
          name: `${node.name}_${script.type === 'number' ? script.text : script.name}`,
        };
      } else break;
    }
    this.depth--;
    return node;
  }

  /** A superscript or subscript: `{…}`, one token, or a signed single token. */
  private parseScript(): MathNode {
    if (this.isChar('{')) return this.parseGroup('{', '}');
    if (this.isChar('-')) {
      this.position++;
      return { type: 'negate', argument: this.parseSingleToken() };
    }
    return this.parseSingleToken();
  }

  /** One TeX argument: `{…}` or a single character token (`\frac12`, `\sqrt2`, `x^2`). */
  private parseArgument(): MathNode {
    if (this.isChar('{')) return this.parseGroup('{', '}');
    return this.parseSingleToken();
  }

  private parseSingleToken(): MathNode {
    const token = this.peek();
    if (token?.kind === 'number') {
      this.position++;
      const digit = token.text[0]!;
      // A TeX argument is one character: `\frac123` is \frac{1}{2}3.
      if (token.text.length > 1)
        this.tokens.splice(this.position, 0, { kind: 'number', text: token.text.slice(1) });
      return { type: 'number', text: digit };
    }
    return this.parsePrimary();
  }

  private parseGroup(open: string, close: string): MathNode {
    this.expectChar(open);
    const node = this.parseAdditive();
    this.expectChar(close);
    return node;
  }

  private parsePrimary(): MathNode {
    const token = this.peek();
    if (token === undefined) throw new ParseFailure('unexpected end');
    if (token.kind === 'number') {
      this.position++;
      if (token.text === '.') throw new ParseFailure('lone "."');
      return { type: 'number', text: token.text };
    }
    if (token.kind === 'letter') {
      this.position++;
      if (token.text === 'e') return { type: 'constant', name: 'e' };
      if (token.text === 'i') return { type: 'constant', name: 'i' };
      return { type: 'symbol', name: token.text };
    }
    if (token.kind === 'char') {
      if (token.text === '(') return this.parseGroup('(', ')');
      if (token.text === '{') return this.parseGroup('{', '}');
      if (token.text === '[') return this.parseGroup('[', ']');
      if (token.text === '|') {
        const inner = this.parseGroup('|', '|');
        return { type: 'call', name: 'abs', args: [inner] };
      }
      throw new ParseFailure(`unexpected "${token.text}"`);
    }
    return this.parseCommand(token.text);
  }

  private parseCommand(name: string): MathNode {
    this.position++;
    switch (name) {
      case 'frac':
      case 'cfrac': {
        const numerator = this.parseArgument();
        const denominator = this.parseArgument();
        return { type: 'divide', numerator, denominator };
      }
      case 'binom': {
        const top = this.parseArgument();
        const bottom = this.parseArgument();
        return { type: 'call', name: 'binomial', args: [top, bottom] };
      }
      case 'sqrt': {
        if (this.isChar('[')) {
          const index = this.parseGroup('[', ']');
          return { type: 'call', name: 'root', args: [this.parseArgument(), index] };
        }
        return { type: 'call', name: 'sqrt', args: [this.parseArgument()] };
      }
      case 'pi':
        return { type: 'constant', name: 'pi' };
      case 'infty':
        return { type: 'constant', name: 'infinity' };
      case 'lfloor':
      case 'lceil': {
        const inner = this.parseAdditive();
        if (!this.isCommand(name === 'lfloor' ? 'rfloor' : 'rceil'))
          throw new ParseFailure(`unclosed \\${name}`);
        this.position++;
        return { type: 'call', name: name === 'lfloor' ? 'floor' : 'ceiling', args: [inner] };
      }
      case '{': {
        throw new ParseFailure('set braces inside an expression');
      }
    }
    if (GREEK.has(name)) return { type: 'symbol', name: name.replace(/^var/, '') };
    const functionName = COMMAND_FUNCTIONS[name];
    if (functionName !== undefined) return this.parseFunction(functionName);
    throw new ParseFailure(`unsupported command \\${name}`);
  }

  /** `\sin x`, `\sin(2x)`, `\sin^2 x`, `\log_2 8`. */
  private parseFunction(name: FunctionName): MathNode {
    let exponent: MathNode | null = null;
    let base: MathNode | null = null;
    for (;;) {
      if (this.isChar('^') && exponent === null) {
        this.position++;
        exponent = this.parseScript();
      } else if (this.isChar('_') && name === 'log' && base === null) {
        this.position++;
        base = this.parseScript();
      } else break;
    }
    let argument: MathNode;
    if (this.isChar('(')) argument = this.parseGroup('(', ')');
    else if (this.isChar('{')) argument = this.parseGroup('{', '}');
    else {
      // Unparenthesised argument: the implicit product that follows (`\sin 2x`).
      argument = this.parsePostfix();
      while (this.startsFactor() && !this.isFunctionAhead())
        argument = multiply(argument, this.parsePostfix());
    }
    const call: MathNode = { type: 'call', name, args: base === null ? [argument] : [argument, base] };
    if (exponent === null) return call;
    if (exponent.type === 'negate' && exponent.argument.type === 'number' && exponent.argument.text === '1') {
      throw new ParseFailure('inverse function notation');
    }
    return { type: 'power', base: call, exponent };
  }

  private isFunctionAhead(): boolean {
    const token = this.peek();
    return token?.kind === 'command' && COMMAND_FUNCTIONS[token.text] !== undefined;
  }
}

function multiply(left: MathNode, right: MathNode): MathNode {
  return left.type === 'multiply'
    ? { type: 'multiply', factors: [...left.factors, right] }
    : { type: 'multiply', factors: [left, right] };
}

/** Parses one normalised LaTeX expression. */
export function parseLatex(text: string): ParseResult {
  try {
    const tokens = tokenize(text);
    if (tokens.length === 0) return { ok: false, error: 'empty expression' };
    return { ok: true, node: new Parser(tokens).parseAll() };
  } catch (error) {
    if (error instanceof ParseFailure) return { ok: false, error: error.message };
    if (error instanceof RangeError) return { ok: false, error: 'expression too deep' };
    throw error;
  }
}
