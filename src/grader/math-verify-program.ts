/**
 * The Python side of the Math-Verify backend, run inside a sandbox session of the jail's
 * environment (`.venv-jail`, where `math-verify` is installed from the lock). The prelude is our
 * own fixed program, sent once per session; each grade is one call whose only argument is a
 * JSON document embedded as a string literal (data, never code built from answer text).
 *
 * Grading follows the usual reward setup of the field (open-r1, verl): the reference is parsed
 * as `\boxed{reference}`, the prediction as the whole response, each with Math-Verify's default
 * extraction (LaTeX, then plain expressions), then `verify(gold, prediction)`. A prediction in
 * which Math-Verify finds no answer and no box is read once more as a bare answer (`\boxed{…}`):
 * the `Grader` contract takes bare answers too (an agent's final box, `grade --prediction 1/2`). Math-Verify's own
 * timeouts use `signal.alarm`, which the sandbox runner's time limit owns, so they are off
 * (`None`) and the session's time limit bounds each call. An exception inside Math-Verify (text
 * that breaks its parser or SymPy) is a wrong answer, as Math-Verify itself treats it.
 */

/** Defines `_agentmath_math_verify(payload: str) -> str` in the session. */
export const MATH_VERIFY_PRELUDE = String.raw`
import json as _am_json, logging as _am_logging
_am_logging.getLogger('math_verify').setLevel(_am_logging.CRITICAL)
from math_verify import parse as _am_mv_parse, verify as _am_mv_verify

def _agentmath_math_verify(payload_text):
    payload = _am_json.loads(payload_text)
    extracted = None
    try:
        gold = _am_mv_parse('\\boxed{' + payload['reference'] + '}', parsing_timeout=None)
        prediction = _am_mv_parse(payload['prediction'], parsing_timeout=None)
        if not prediction and '\\boxed' not in payload['prediction']:
            # A bare answer (an agent's final box, without delimiters), read as one.
            prediction = _am_mv_parse('\\boxed{' + payload['prediction'] + '}', parsing_timeout=None)
        if len(prediction) > 1:
            extracted = str(prediction[-1])[:1000]
        correct = bool(_am_mv_verify(gold, prediction, timeout_seconds=None))
    except Exception as error:  # text that breaks the checker is a wrong answer, not an outage
        return _am_json.dumps({'correct': False, 'extracted': extracted,
                               'error': '%s: %s' % (type(error).__name__, str(error)[:200])})
    return _am_json.dumps({'correct': correct, 'extracted': extracted})
`;

/** The code cell for one grade: a call whose argument is the pair as a JSON string literal. */
export function mathVerifyCallCode(prediction: string, reference: string): string {
  return `print(_agentmath_math_verify(${JSON.stringify(JSON.stringify({ prediction, reference }))}))`;
}
