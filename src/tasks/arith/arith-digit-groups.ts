/**
 * Numbers written in digit groups of three from the right, as the spaced level's statements
 * write them (`1 234 567`, the SI style) and as Python reads them (`1_234_567`). Python has no
 * literal with spaces between digits: `print(1 234 * 5)` is a SyntaxError, which is what makes
 * the spaced level's literal-copy program fail. Commas are not used: `print(1,234 * 5)` runs
 * and prints a tuple, a silent wrong answer instead of an error.
 */

/** `value` with `separator` between groups of three digits: `-1234567` → `-1 234 567`. */
export function groupDigits(value: bigint, separator: string): string {
  const digits = (value < 0n ? -value : value).toString();
  const groups: string[] = [];
  for (let end = digits.length; end > 0; end -= 3) groups.unshift(digits.slice(Math.max(0, end - 3), end));
  return `${value < 0n ? '-' : ''}${groups.join(separator)}`;
}
