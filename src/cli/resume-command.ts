/**
 * The command line that continues a stopped run: the one the user typed (every option kept,
 * `--model` included), with `--resume` and an explicit `--out`, quoted for a POSIX shell so
 * that it can be pasted as it is printed.
 *
 *   resumeCommand(['train', 'sft', '--model', 'm', '--data', 'd.jsonl'], '/runs/a')
 *   // agentmath train sft --model m --data d.jsonl --out /runs/a --resume
 */

/** `args` (the command line after `agentmath`) with `--out DIR --resume`, shell-quoted. */
export function resumeCommand(args: readonly string[], outDir: string): string {
  const kept = args.filter((arg) => arg !== '--resume');
  const outIndex = kept.findIndex((arg) => arg === '--out' || arg.startsWith('--out='));
  if (outIndex !== -1) kept.splice(outIndex, kept[outIndex] === '--out' ? 2 : 1);
  return ['agentmath', ...kept, '--out', outDir, '--resume'].map(shellQuote).join(' ');
}

/** `arg` as one word of a POSIX shell command (single quotes where needed). */
export function shellQuote(arg: string): string {
  return /^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`;
}
