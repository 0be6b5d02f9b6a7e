import { describe, expect, it } from 'vitest';
import { checkBindAuth, isLoopbackHost, tokenMatches } from './bind-auth.ts';

const base = {
  server: 'sandbox serve',
  tokenSource: '--token or AGENTMATH_SANDBOX_TOKEN',
  noAuth: false,
  risk: 'runs code in the sandbox',
};

describe('isLoopbackHost', () => {
  it('knows loopback addresses from public ones', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ['0.0.0.0', '::', '192.168.1.5', '10.0.0.1', 'example.com', '::ffff:10.0.0.1']) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe('checkBindAuth', () => {
  it('lets loopback serve without a token, and a token serve anywhere', () => {
    expect(checkBindAuth({ ...base, host: '127.0.0.1', token: undefined })).toBeNull();
    expect(checkBindAuth({ ...base, host: '0.0.0.0', token: 's3cret' })).toBeNull();
  });

  it('refuses a public bind without a token', () => {
    expect(() => checkBindAuth({ ...base, host: '0.0.0.0', token: undefined })).toThrow(
      expect.objectContaining({
        code: 'AUTH_REQUIRED',
        message: expect.stringMatching(/0\.0\.0\.0.*--no-auth/),
      }),
    );
  });

  it('refuses an empty token, on loopback too', () => {
    for (const host of ['0.0.0.0', '127.0.0.1']) {
      for (const token of ['', '  ']) {
        expect(() => checkBindAuth({ ...base, host, token })).toThrow(
          expect.objectContaining({ code: 'AUTH_TOKEN_EMPTY' }),
        );
      }
    }
  });

  it('serves a public address with --no-auth, returning the warning to print', () => {
    const warning = checkBindAuth({ ...base, host: '::', token: undefined, noAuth: true });
    expect(warning).toMatch(/warning: sandbox serve on :: without authentication.*runs code/);
    expect(() => checkBindAuth({ ...base, host: '::', token: 'x', noAuth: true })).toThrow(
      expect.objectContaining({ code: 'AUTH_CONFLICT' }),
    );
  });
});

describe('tokenMatches', () => {
  it('accepts exactly the bearer token', () => {
    expect(tokenMatches('Bearer abc', 'abc')).toBe(true);
    expect(tokenMatches('Bearer abd', 'abc')).toBe(false);
    expect(tokenMatches('Bearer abcd', 'abc')).toBe(false);
    expect(tokenMatches('abc', 'abc')).toBe(false);
    expect(tokenMatches(undefined, 'abc')).toBe(false);
  });
});
