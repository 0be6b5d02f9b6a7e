/**
 * The text corpus on which our tokenizer is compared with the Hugging Face `tokenizers`
 * library (`test/tokenizer-parity.test.ts`) and timed (`agentmath bench tokenizer`). Classes:
 * every problem and answer of the benchmark files found in the data folder, Python code of the
 * kind a model writes in a tool call, interpreter output and tracebacks, Unicode (CJK, emoji
 * sequences, combining marks, RTL scripts, NFC/NFD pairs, the whitespace characters on which
 * JavaScript's `\s` and Oniguruma's disagree), long digit runs, whitespace runs, special tokens
 * written in text, and seeded random mixtures of all of these. Deterministic: the same data
 * folder gives the same corpus.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const CORPUS_CLASSES = [
  'benchmark',
  'python-code',
  'interpreter-output',
  'unicode',
  'digits',
  'whitespace',
  'special-tokens',
  'random-mix',
] as const;

export type CorpusClass = (typeof CORPUS_CLASSES)[number];

export type CorpusText = { corpusClass: CorpusClass; text: string };

export type TokenizerCorpusOptions = {
  /** Benchmark folder (`*.jsonl` with `problem` and `answer`); null: no benchmark class. */
  dataDir: string | null;
  /** Added tokens of the tokenizer under test, written into text by the special-token class. */
  addedTokens?: readonly string[];
  /** Number of seeded random mixtures. */
  randomTexts?: number;
  seed?: number;
};

/** The whole corpus, class by class. */
export function buildTokenizerCorpus(options: TokenizerCorpusOptions): CorpusText[] {
  const { dataDir, addedTokens = ['<|endoftext|>'], randomTexts = 300, seed = 25 } = options;
  const random = seededRandom(seed);
  const tag = (corpusClass: CorpusClass, texts: readonly string[]): CorpusText[] =>
    texts.map((text) => ({ corpusClass, text }));
  const parts = [
    tag('benchmark', dataDir === null ? [] : benchmarkTexts(dataDir)),
    tag('python-code', PYTHON_CODE),
    tag('interpreter-output', INTERPRETER_OUTPUT),
    tag('unicode', unicodeTexts()),
    tag('digits', digitTexts(random)),
    tag('whitespace', whitespaceTexts()),
    tag('special-tokens', specialTokenTexts(addedTokens)),
  ];
  const pool = parts.flat().map((entry) => entry.text);
  const mixtures: string[] = [];
  for (let index = 0; index < randomTexts; index++) mixtures.push(randomMixture(pool, random));
  return [...parts.flat(), ...tag('random-mix', mixtures)];
}

/** Every `problem` and `answer` of the `*.jsonl` files in `dataDir`. */
export function benchmarkTexts(dataDir: string): string[] {
  const texts: string[] = [];
  const files = readdirSync(dataDir)
    .filter((name) => name.endsWith('.jsonl'))
    .sort();
  for (const file of files) {
    for (const line of readFileSync(join(dataDir, file), 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      const record = JSON.parse(line) as { problem?: unknown; answer?: unknown };
      if (typeof record.problem === 'string') texts.push(record.problem);
      if (typeof record.answer === 'string') texts.push(record.answer);
    }
  }
  return texts;
}

const PYTHON_CODE = [
  'import sympy as sp\nx = sp.symbols("x")\nprint(sp.solve(x**2 - 5*x + 6, x))',
  'from math import comb, gcd\n\ntotal = 0\nfor n in range(1, 1001):\n    if gcd(n, 1000) == 1:\n        total += comb(n, 2) % 1000\nprint(total)',
  'def f(n: int) -> int:\n\t"""Tab-indented."""\n\treturn n*(n+1)//2\n\nprint([f(k) for k in range(10)])',
  'import numpy as np\nA = np.array([[1, 2], [3, 4]], dtype=np.float64)\nprint(np.linalg.det(A), A @ A.T)\n',
  'count = sum(1 for a in range(1, 100) for b in range(a, 100) if (a*a + b*b) ** 0.5 % 1 == 0)\nprint(f"{count=}, {count:>10d}, {count/7:.3f}")',
  "class Node:\n    def __init__(self, value, children=None):\n        self.value = value\n        self.children = children or []\n\n    def __repr__(self):\n        return f'Node({self.value!r})'\n",
  "s = '''multi\nline\tstring'''\nprint(s.split())  # comment with café and ∑\n",
  'while True:\n    try:\n        x = int(input())\n    except (ValueError, EOFError) as error:\n        print("bad", error)\n        break\n',
  "result = {k: v for k, v in zip('abc', [1.5e-10, -2.0E+3, 0x1F])}\nprint(result)\r\n",
  '    \n        \n  lambda x: x  # trailing spaces   \n\n\n',
  "print(2**1000)\nprint(sp.Rational(1, 3) + sp.sqrt(2))\nassert all(p % 2 for p in sp.primerange(3, 50)), 'odd'",
  "it's they're we've I'm you'll he'd IT'S THEY'RE WE'VE I'M YOU'LL HE'D 'S 'T 's't",
];

const INTERPRETER_OUTPUT = [
  '[2, 3]',
  '-2.0000000000000004 [[ 5. 11.]\n [11. 25.]]',
  'count=18, ' + '        18, 2.571',
  'Traceback (most recent call last):\n  File "<stdin>", line 3, in <module>\n  File "/tmp/x.py", line 12, in f\n    return 1 / n\n           ~~^~~\nZeroDivisionError: division by zero\n',
  "Traceback (most recent call last):\n  File \"<string>\", line 1, in <module>\nNameError: name 'sp' is not defined. Did you mean: 'np'?",
  '  File "<string>", line 2\n    for i in range(10)\n                      ^\nSyntaxError: expected \':\'',
  'sqrt(2) + 1/3\n{x: -1/2 + sqrt(5)/2, y: 3}\nMatrix([[1, 0], [0, 1]])',
  'array([0.        , 0.33333333, 0.66666667, 1.        ])\n',
  '1.0715086071862673e+301\nTrue\nNone\n(1+2j)\ninf nan -0.0',
  '>>> 1 + 1\n2\n>>> \n... \n',
  '[Execution timed out after 10 seconds]\n\nstdout:\n\nstderr:\nKilled\n',
  'RecursionError: maximum recursion depth exceeded while calling a Python object\n',
];

function unicodeTexts(): string[] {
  const decomposed = 'Cafe\u0301 re\u0301sume\u0301 n\u0303 A\u030a \u1100\u1161\u11a8'; // NFD forms
  return [
    '数学竞赛题：求所有满足 x²+y²=2025 的整数解。',
    '日本語のテキスト、カタカナとひらがな。漢字も。',
    '한국어 문장입니다. 수학 문제를 풉니다.',
    '😀 🧮 👩‍👩‍👧‍👦 👍🏽 🇫🇷🇯🇵 ❤️ 1️⃣ 🏳️‍🌈',
    decomposed,
    decomposed.normalize('NFC'),
    'e\u0301\u0302\u0303 a\u0308\u0304 Z\u0335\u0336\u0337 ̈alone',
    'مرحبا بالعالم ١٢٣ ٤٥٦',
    'שלום עולם 123 ‏mixed‎ direction',
    '\u202ereversed\u202c and \u2066isolate\u2069',
    'नमस्ते दुनिया, ภาษาไทย, ქართული, Ελληνικά, Русский текст',
    '𝑥 + 𝑦 = 𝔸 ∀ε>0 ∃δ ∈ ℝ: |f(x) − L| < ε ⟹ ∑ ∏ ∫ √ ∞ ≤ ≥ ≠ ±',
    'fullwidth ０１２３ ＡＢＣ, superscripts x² x³ ¹/₂ ½ ⅓ Ⅻ',
    'no\u00a0break nbsp\u3000ideographic\u2009thin\u200bzero\u200dzwj\u2060wj',
    'nel\u0085line bom\ufeffmark \u2028ls \u2029ps \u000bvt \u000cff \u001cfs \u001dgs \u001ers \u001fus',
    'a\u0085 b \u0085\u0085c \ufeff\ufeff d\u1680e\u180ef',
    'space then bom \ufeffword, space then nel \u0085word, bang!\u0085 x\u0085\u0085',
    "long s \u017f and it'\u017f, kelvin \u212a, 'ſ 'K",
    'control \u0000 \u0001 \u007f \u0080 \u009f chars',
    '\ufffd replacement, private \ue000 \udbff\udfff plane 16, 𐍈 gothic',
    'ǅ titlecase, ß ẞ, İ ı, ﬁ ligature, Å Ω',
  ];
}

function digitTexts(random: () => number): string[] {
  const digitsOf = (length: number) => {
    let digits = '';
    for (let index = 0; index < length; index++) digits += Math.floor(random() * 10).toString();
    return digits;
  };
  return [
    ...[1, 2, 3, 4, 7, 16, 64, 301, 1000].map(digitsOf),
    (2n ** 1000n).toString(),
    `-${digitsOf(40)}.${digitsOf(40)}e-${digitsOf(3)}`,
    '1,234,567,890 1 234 567 1_000_000 3.14159265358979323846264338327950288',
    `x = ${digitsOf(50)}\ny = 0.${digitsOf(80)}\n`,
    '٠١٢٣٤٥٦٧٨٩ ۰۱۲۳ ०१२३ 〇一二三 ①②③ ⅠⅡⅢ 0x7fffffff 0b1010',
    `${'9'.repeat(500)}`,
    'a1b2c3 x10y20 v2.0.1 1st 2nd 3rd 10^{10} 2^{2^{2}}',
  ];
}

function whitespaceTexts(): string[] {
  return [
    ' ',
    '  ',
    ' '.repeat(100),
    '\t\t\t',
    '\n',
    '\n\n\n\n',
    '\r\n\r\n',
    ' \n \n ',
    'word   word\t\tword\n\n\nword',
    '  leading and trailing  ',
    'end with newline\n',
    'end with spaces   ',
    ' \t \n\t \r\n  x',
    `a${' '.repeat(17)}\n${'\t'.repeat(9)}b`,
    '\n\n    indented\n        more\n    back\n',
    'x \r y\r\rz',
  ];
}

function specialTokenTexts(addedTokens: readonly string[]): string[] {
  const texts: string[] = [];
  for (const token of addedTokens) {
    texts.push(token, `before${token}after`, ` ${token} `, `${token}${token}`, `\n${token}\n`);
    // Whitespace that Rust strips around lstrip/rstrip tokens and JavaScript's trim does not, and back.
    texts.push(`a\u0085${token}\u0085b`, `a \ufeff${token}\ufeff b`, `a\t\n ${token} \n\tb`);
    // Fullwidth forms: NFKC turns them into the token (matched there only if it is `normalized`).
    texts.push(`x ${toFullwidth(token)} y`, `x${toFullwidth(token)}y`);
    if (token.length > 2) texts.push(token.slice(0, -1), `${token.slice(0, -1)} ${token.slice(-1)}`);
  }
  texts.push(
    '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>',
    '<|im_start|><|im_end|><|endoftext|>',
    '< |endoftext| > <|endoftext <endoftext|> <|unknown_token|> <|',
  );
  return texts;
}

/** ASCII printable characters written as their fullwidth forms (U+FF01..U+FF5E). */
function toFullwidth(text: string): string {
  return text.replace(/[!-~]/g, (char) => String.fromCodePoint(char.codePointAt(0)! + 0xfee0));
}

/** A random concatenation of slices of the pool (mixes classes and cuts mid-word). */
function randomMixture(pool: readonly string[], random: () => number): string {
  const pieces = 1 + Math.floor(random() * 5);
  let text = '';
  for (let piece = 0; piece < pieces; piece++) {
    const source = pool[Math.floor(random() * pool.length)] ?? '';
    const characters = Array.from(source);
    const start = Math.floor(random() * characters.length);
    const end = start + Math.floor(random() * (characters.length - start + 1));
    text += characters.slice(start, end).join('');
  }
  return text;
}

/** mulberry32: a small seeded generator, so the corpus is the same on every run. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let mixed = Math.imul(state ^ (state >>> 15), 1 | state);
    mixed = (mixed + Math.imul(mixed ^ (mixed >>> 7), 61 | mixed)) ^ mixed;
    return ((mixed ^ (mixed >>> 14)) >>> 0) / 4_294_967_296;
  };
}
