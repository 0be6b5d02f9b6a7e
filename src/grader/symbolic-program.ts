/**
 * The Python side of the symbolic step, run inside a sandbox session. The prelude is our
 * own fixed program, sent once per session; each query is then one call whose only
 * argument is a JSON document embedded as a string literal (JSON.stringify twice), i.e.
 * data, never code built from answer text.
 *
 * Safety, in layers: (1) the expression strings come from `toSympy`, whose output grammar is
 * fixed; (2) the checker tokenises each string and accepts only integers, the operators
 * `+ - * / ** ( ) ,`, whitelisted SymPy names and declared `s_…` symbols: no dots (so no
 * attribute access), no quotes, brackets or keywords; (3) `parse_expr` then runs with no
 * transformations and a global namespace holding only those names and empty builtins;
 * (4) all of it runs in the jailed sandbox under its time and memory limits.
 *
 * Decision: numeric rejection at random positive points first (cheap), then `simplify`
 * of the difference (proof: 'symbolic'), then agreement at every sample point to 1e-20
 * relative (evidence: 'numeric'). Symbols are positive, so √(1/n) = 1/√n.
 */

/** Defines `_agentmath_check(payload: str) -> str` in the session. */
export const SYMBOLIC_PRELUDE = String.raw`
import json as _am_json, random as _am_random, re as _am_re
import sympy as _am_sympy
from sympy.parsing.sympy_parser import parse_expr as _am_parse_expr

_AM_NAMES = {name: getattr(_am_sympy, name) for name in (
    'Integer', 'Rational', 'sqrt', 'root', 'sin', 'cos', 'tan', 'cot', 'sec', 'csc', 'asin',
    'acos', 'atan', 'sinh', 'cosh', 'tanh', 'log', 'exp', 'Abs', 'floor', 'ceiling',
    'binomial', 'factorial', 'factorial2', 'pi', 'E', 'I', 'oo')}
_AM_TOKEN = _am_re.compile(r'\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(\*\*|[-+*/(),]))')
_AM_SYMBOL = _am_re.compile(r'[A-Za-z][A-Za-z0-9_]{0,30}$')

def _am_parse(text, symbols):
    if len(text) > 20000:
        raise ValueError('expression too long')
    position, stripped = 0, text.rstrip()
    while position < len(stripped):
        match = _AM_TOKEN.match(stripped, position)
        if match is None or match.end() == position:
            raise ValueError('unexpected character at %d' % position)
        name = match.group(2)
        if name is not None and name not in _AM_NAMES and name not in symbols:
            raise ValueError('name not allowed: %s' % name)
        position = match.end()
    namespace = {'__builtins__': {}}
    namespace.update(_AM_NAMES)
    namespace.update(symbols)
    return _am_parse_expr(stripped, local_dict={}, global_dict=namespace, transformations=(), evaluate=True)

def _am_number(expression, point):
    value = expression.subs(point).evalf(30)
    if not value.is_number or value.has(_am_sympy.zoo, _am_sympy.nan, _am_sympy.oo, -_am_sympy.oo):
        return None
    try:
        return complex(value)
    except (TypeError, ValueError):
        return None

def _am_points(symbols, count, seed):
    rng = _am_random.Random(seed)
    if not symbols:
        return [{}]
    return [{symbol: _am_sympy.Rational(rng.randint(101, 997), rng.randint(101, 397)) for symbol in symbols.values()}
            for _ in range(count)]

def _am_compare_values(pairs):
    """'different' if any pair clearly differs, 'close' if all agree to 1e-20, else 'unknown'."""
    agreed = 0
    for a, b in pairs:
        if a is None or b is None:
            continue
        scale = max(1.0, abs(a), abs(b))
        gap = abs(a - b)
        if gap > 1e-8 * scale:
            return 'different'
        if gap <= 1e-20 * scale:
            agreed += 1
    return 'close' if agreed >= min(3, len(pairs)) and agreed > 0 else 'unknown'

def _am_expression(a, b, symbols):
    if a == b:
        return {'outcome': 'equal', 'method': 'symbolic'}
    if a.has(_am_sympy.oo) or b.has(_am_sympy.oo):
        return {'outcome': 'different'}
    points = _am_points(symbols, 5, 20250101)
    numeric = _am_compare_values([(_am_number(a, p), _am_number(b, p)) for p in points])
    if numeric == 'different':
        return {'outcome': 'different'}
    if _am_sympy.simplify(a - b) == 0:
        return {'outcome': 'equal', 'method': 'symbolic'}
    if numeric == 'close':
        return {'outcome': 'equal', 'method': 'numeric'}
    return {'outcome': 'unknown'}

def _am_equation(l1, r1, l2, r2, symbols):
    first, second = l1 - r1, l2 - r2
    if first == 0 or second == 0:
        return {'outcome': 'unknown'}
    points = _am_points(symbols, 5, 20250102)
    ratios = []
    for point in points:
        x, y = _am_number(first, point), _am_number(second, point)
        if x is not None and y is not None and abs(y) > 1e-12:
            ratios.append(x / y)
    if ratios and any(abs(r - ratios[0]) > 1e-8 * max(1.0, abs(ratios[0])) for r in ratios):
        return {'outcome': 'different'}
    ratio = _am_sympy.simplify(first / second)
    if ratio.is_number and ratio != 0 and ratio.is_finite:
        return {'outcome': 'equal', 'method': 'symbolic'}
    if len(ratios) >= 3 and abs(ratios[0]) > 1e-12:
        return {'outcome': 'equal', 'method': 'numeric'}
    return {'outcome': 'unknown'}

def _agentmath_check(payload_text):
    try:
        payload = _am_json.loads(payload_text)
        symbols = {}
        for name in payload['symbols']:
            if not _AM_SYMBOL.match(name):
                raise ValueError('bad symbol name')
            symbols['s_' + name] = _am_sympy.Symbol(name, positive=True)
        if payload['kind'] == 'expression':
            result = _am_expression(_am_parse(payload['left'], symbols), _am_parse(payload['right'], symbols), symbols)
        else:
            (l1, r1), (l2, r2) = payload['left'], payload['right']
            result = _am_equation(*[_am_parse(side, symbols) for side in (l1, r1, l2, r2)], symbols)
    except Exception as error:  # a parse failure or a SymPy error is an answer, not a crash
        result = {'outcome': 'error', 'message': '%s: %s' % (type(error).__name__, str(error)[:200])}
    return _am_json.dumps(result)
`;

/** The code cell for one query: a call whose argument is the query as a JSON string literal. */
export function symbolicCallCode(payload: unknown): string {
  return `print(_agentmath_check(${JSON.stringify(JSON.stringify(payload))}))`;
}
