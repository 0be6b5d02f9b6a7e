/**
 * The AgentMath tags dialect: `<think>` reasoning with `<code>…</code>` blocks, each followed
 * by the interpreter's `<interpreter>…</interpreter>`; the answer after `</think>` in `\boxed{}`.
 * The engine stops on `</code>`.
 */
import { createDialect } from './create-dialect.ts';
import type { BlockMarkup } from './dialect.ts';

function tag(name: string): BlockMarkup {
  return {
    open: new RegExp(`<${name}>`, 'g'),
    close: new RegExp(`</${name}>`, 'g'),
    openText: `<${name}>`,
    closeText: `</${name}>`,
  };
}

/** `<think>…<code>\ncode\n</code>\n<interpreter>\noutput\n</interpreter>\n…</think>\n\boxed{…}` */
export const tagsDialect = createDialect({
  name: 'tags',
  stopStrings: ['</code>'],
  markup: {
    reasoning: tag('think'),
    code: tag('code'),
    toolOutput: tag('interpreter'),
    verbatim: null,
    lineAnchored: false,
  },
});
