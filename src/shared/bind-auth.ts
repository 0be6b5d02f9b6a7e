/**
 * Who may use a server: the rule every AgentMath server applies before it listens. On a
 * loopback address no token is needed; on any other address a token is required, unless
 * authentication is turned off explicitly (`noAuth`), which is reported as a warning. An
 * empty token never turns authentication off: it is refused. Servers compare tokens in
 * constant time (`tokenMatches`).
 */
import { timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { AgentMathError } from './agentmath-error.ts';

/** The codes of a refusal by this rule: a mistake in the command line (the CLI exits 2). */
export const BIND_AUTH_CODES = ['AUTH_TOKEN_EMPTY', 'AUTH_REQUIRED', 'AUTH_CONFLICT'] as const;

/** A server was asked to listen in a way that would let strangers in. */
export class BindAuthError extends AgentMathError {
  constructor(code: (typeof BIND_AUTH_CODES)[number], message: string) {
    super(code, message);
  }
}

/** Whether `host` only accepts connections from this machine (127.0.0.0/8, ::1, localhost). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1' || /^::ffff:127\./.test(bare);
  return false;
}

export type BindAuthInput = {
  /** What is being served, for messages: `sandbox serve`, `engine serve`. */
  server: string;
  host: string;
  /** The token, or undefined when none was given. */
  token: string | undefined;
  /** Where a token comes from, for messages: `--token or AGENTMATH_SANDBOX_TOKEN`. */
  tokenSource: string;
  /** Serve without a token even on a public address. */
  noAuth: boolean;
  /** What a stranger could do, for the warning: `runs code in the sandbox`. */
  risk: string;
};

/**
 * Checks the rule; throws `BindAuthError` when it is broken. Returns the warning to print
 * when authentication was turned off on a non-loopback address, else null.
 */
export function checkBindAuth(input: BindAuthInput): string | null {
  const { server, host, token, tokenSource, noAuth, risk } = input;
  if (token !== undefined && token.trim() === '') {
    throw new BindAuthError(
      'AUTH_TOKEN_EMPTY',
      `${server}: the token is empty (${tokenSource}); an empty token does not turn authentication off. ` +
        'Give a token, or leave it unset (and pass --no-auth to serve a public address without one)',
    );
  }
  if (token !== undefined && noAuth) {
    throw new BindAuthError(
      'AUTH_CONFLICT',
      `${server}: a token is set (${tokenSource}) and --no-auth was given; choose one`,
    );
  }
  if (token !== undefined || isLoopbackHost(host)) return null;
  if (!noAuth) {
    throw new BindAuthError(
      'AUTH_REQUIRED',
      `${server}: ${host} is not a loopback address, so a token is required (${tokenSource}); ` +
        `or pass --no-auth to serve without one, and anyone who can reach ${host} ${risk}`,
    );
  }
  return `warning: ${server} on ${host} without authentication (--no-auth): anyone who can reach it ${risk}`;
}

/** Whether an `Authorization` header carries `Bearer <token>`, compared in constant time. */
export function tokenMatches(authorization: string | undefined, token: string): boolean {
  const given = Buffer.from(authorization ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
