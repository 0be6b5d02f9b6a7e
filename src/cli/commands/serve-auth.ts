/**
 * `sandbox serve` and `engine serve` refuse to open a server to strangers (the rule in
 * src/shared/bind-auth.ts). Such a refusal comes before anything listens and is a mistake in
 * the command line, so it exits with status 2 like the other option errors, keeping its code.
 */
import { BindAuthError } from '../../shared/bind-auth.ts';

/** Runs `start`; a refusal by the bind rule sets exit status 2 and is rethrown to be printed. */
export async function startServerOrRefuse<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    if (error instanceof BindAuthError) process.exitCode = 2;
    throw error;
  }
}
