import { describe, expect, it } from 'vitest';
import { resolveApiKey, withoutApiKey } from './api-key.ts';

describe('resolveApiKey', () => {
  it('prefers --api-key, then the API environment variable', () => {
    const env = { OPENAI_API_KEY: 'sk-env', AGENTMATH_ENGINE_API_KEY: 'engine-env' };
    expect(resolveApiKey('openai', 'sk-flag', env)).toBe('sk-flag');
    expect(resolveApiKey('openai-chat', undefined, env)).toBe('sk-env');
    expect(resolveApiKey('sglang', undefined, env)).toBe('engine-env');
    expect(resolveApiKey('vllm', undefined, {})).toBeUndefined();
  });

  it('treats an empty variable as unset and refuses an empty --api-key', () => {
    expect(resolveApiKey('openai', undefined, { OPENAI_API_KEY: '' })).toBeUndefined();
    expect(() => resolveApiKey('openai', '', {})).toThrow(/--api-key is empty.*OPENAI_API_KEY/);
  });
});

describe('withoutApiKey', () => {
  it('drops the option and its value in both spellings', () => {
    expect(
      withoutApiKey(['eval', '--api-key', 'sk-1', '--api', 'openai', '--api-key=sk-2', '-k', '2']),
    ).toEqual({
      args: ['eval', '--api', 'openai', '-k', '2'],
      dropped: true,
    });
    expect(withoutApiKey(['eval', '--api', 'openai']).dropped).toBe(false);
  });
});
