import { describe, expect, it } from 'vitest';
import { repairFormat } from './format-repair.ts';

const GOOD =
  '<think>Multiply. <code>\nprint(12 * 34)\n</code>\n<interpreter>\n408\n</interpreter>\nDone.</think>\nThe answer is \\boxed{408}.';

describe('format repair (stage 2a)', () => {
  it('keeps a clean tag trajectory as it is', () => {
    expect(repairFormat(GOOD)).toEqual({ status: 'ok', text: GOOD, repairs: [] });
  });

  it('turns markdown code and output fences into tags', () => {
    const text =
      '<think>Multiply.\n```python\nprint(12 * 34)\n```\n```output\n408\n```\nDone.</think>\nThe answer is \\boxed{408}.';
    const result = repairFormat(text);
    expect(result.status).toBe('ok');
    if (result.status !== 'ok') return;
    expect(result.repairs).toEqual(['markdown-code', 'markdown-output']);
    expect(result.text).toContain('<code>\nprint(12 * 34)\n</code>\n<interpreter>\n408\n</interpreter>');
  });

  it('closes a code block left open before its output, and an unclosed think', () => {
    const text =
      '<think>Multiply. <code>\nprint(12 * 34)\n<interpreter>\n408\n</interpreter>\nDone.\nThe answer is \\boxed{408}.';
    const result = repairFormat(text);
    expect(result).toMatchObject({ status: 'ok', repairs: ['unclosed-code', 'unclosed-think'] });
    if (result.status === 'ok') expect(result.text).toContain('print(12 * 34)\n</code>\n<interpreter>');
  });

  it('drops what is not mechanically repairable, saying why', () => {
    expect(repairFormat(GOOD.replace('Multiply.', 'Multiply </code>'))).toMatchObject({
      status: 'drop',
      reason: 'format-unrepairable',
    });
    expect(repairFormat(GOOD.replace('\\boxed{408}', '408'))).toMatchObject({
      status: 'drop',
      reason: 'no-answer',
    });
    expect(repairFormat('<think>12 * 34 = 408</think>\nThe answer is \\boxed{408}.')).toMatchObject({
      status: 'drop',
      reason: 'no-tool-call',
    });
  });
});
