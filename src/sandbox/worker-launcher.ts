/**
 * Starts jailed workers without forking the Node process. `child_process.spawn` forks and
 * waits for the exec on the event loop's thread, which costs tens of milliseconds per worker
 * on a busy machine; a pool that starts and retires a worker per session would stall every
 * trajectory in the process. So the pool starts one small Python helper
 * (`python/agentmath_sandbox/launcher.py`) and sends it spawn and kill requests over a framed
 * socket; the helper reaps its children and reports how each ended.
 *
 * Each jail's runner still gets a private control socket as its fd 3, connected to this
 * process directly: the helper connects to a Unix socket this launcher listens on (an
 * abstract name, unreachable from the jails' own network namespaces), writes a fixed-size
 * hello (this launcher's random token and the worker's id) and only then starts the jail with
 * the connection, so the jail cannot pose as another worker. Not covered: what the command
 * does (see jail-command.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { encodeFrame, FrameDecoder } from './frame-codec.ts';

/** How a launched process ended; `error` is set when it never started or the helper died. */
export type LaunchedProcessEnd = {
  code: number | null;
  signal: string | null;
  stderr: string;
  error: string | null;
};

/** Callbacks of one launched process, called at most once each, in this order. */
export type LaunchHandlers = {
  onSpawn(pid: number): void;
  /** The process's end of its control connection (the hello already consumed). */
  onConnection(socket: Socket, firstBytes: Buffer): void;
  onExit(end: LaunchedProcessEnd): void;
};

/** A process started by the helper; `kill()` SIGKILLs its pid namespace (see launcher.py). */
export type LaunchedProcess = { readonly id: number; kill(): void };

/** Host path of the helper program. */
export const LAUNCHER_PATH = fileURLToPath(
  new URL('../../python/agentmath_sandbox/launcher.py', import.meta.url),
);

export type WorkerLauncherOptions = {
  /** The host interpreter that runs the helper (not jailed: it is the pool's own code). */
  pythonPath: string;
  launcherPath?: string;
  log: (line: string) => void;
};

const TOKEN_CHARS = 32;
const HELLO_BYTES = TOKEN_CHARS + 32;
const HELLO_TIMEOUT_MS = 10_000;

type Entry = { handlers: LaunchHandlers; connected: boolean; ended: boolean };

/** One helper process and the socket its jails connect back to; restarted if the helper dies. */
export class WorkerLauncher {
  readonly #options: WorkerLauncherOptions;
  readonly #token = randomBytes(TOKEN_CHARS / 2).toString('hex');
  readonly #socketPath = `\0agentmath-sandbox-${process.pid}-${randomBytes(8).toString('hex')}`;
  readonly #entries = new Map<number, Entry>();
  #server: Server | null = null;
  #helper: ChildProcess | null = null;
  #helperControl: Socket | null = null;
  #helperExited: Promise<void> = Promise.resolve();
  #nextId = 1;
  #closed = false;

  constructor(options: WorkerLauncherOptions) {
    this.#options = options;
  }

  /** Asks the helper to start `argv` with `env`; the handlers report what happens. */
  launch(argv: readonly string[], env: Record<string, string>, handlers: LaunchHandlers): LaunchedProcess {
    const id = this.#nextId++;
    const entry: Entry = { handlers, connected: false, ended: false };
    this.#entries.set(id, entry);
    if (this.#closed) {
      this.#end(id, { code: null, signal: null, stderr: '', error: 'the sandbox launcher is closed' });
    } else {
      this.#send({ op: 'spawn', id, argv, env });
    }
    return { id, kill: () => this.#send({ op: 'kill', id }) };
  }

  /** Stops the helper (its jails die with it) and the listening socket; waits for the helper. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#helperControl?.end();
    await this.#helperExited;
    this.#server?.close();
    this.#server = null;
  }

  #send(message: { op: string; id: number; [key: string]: unknown }): void {
    if (this.#closed && message.op === 'spawn') return;
    const control = this.#ensureHelper();
    if (control) control.write(encodeFrame(message));
  }

  #ensureHelper(): Socket | null {
    if (this.#helperControl && !this.#helperControl.destroyed) return this.#helperControl;
    if (this.#closed) return null;
    this.#listen();
    const { pythonPath, launcherPath = LAUNCHER_PATH, log } = this.#options;
    const config = { socketPath: this.#socketPath, token: this.#token, parentPid: process.pid };
    // The one fork this process makes: the helper, once (and again only if it died).
    const helper = spawn(pythonPath, ['-I', '-B', '-S', launcherPath, JSON.stringify(config)], {
      stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
      env: { PATH: '/usr/bin:/bin' },
    });
    const control = helper.stdio[3] as Socket;
    this.#helper = helper;
    this.#helperControl = control;
    const decoder = new FrameDecoder(1024 * 1024);
    control.on('data', (chunk: Buffer) => {
      for (const message of decoder.push(chunk)) this.#onHelperMessage(message);
    });
    control.on('error', () => {});
    let stderr = '';
    helper.stderr?.on('data', (chunk: Buffer) => {
      if (stderr.length < 4096) stderr += chunk.toString('utf8');
    });
    this.#helperExited = new Promise((resolve) => {
      helper.on('error', (error) => log(`sandbox: cannot start the launcher: ${error.message}`));
      helper.on('close', (code, signal) => {
        if (this.#helper === helper) {
          this.#helper = null;
          this.#helperControl = null;
        }
        const how = signal ? `signal ${signal}` : `exit code ${code}`;
        if (!this.#closed) log(`sandbox: the launcher ended (${how}) ${stderr.trim()}`.trim());
        // Its jails died with it (bwrap --die-with-parent); report each that was still running.
        for (const id of [...this.#entries.keys()]) {
          this.#end(id, {
            code: null,
            signal: null,
            stderr: '',
            error: `the sandbox launcher ended (${how})`,
          });
        }
        resolve();
      });
    });
    return control;
  }

  #listen(): void {
    if (this.#server) return;
    const server = createServer((socket) => this.#onConnection(socket));
    server.on('error', (error) => this.#options.log(`sandbox: launcher socket: ${error.message}`));
    // listen() binds and listens before it returns, so the helper may connect at once.
    server.listen(this.#socketPath);
    this.#server = server;
  }

  #onHelperMessage(message: Record<string, unknown>): void {
    const id = typeof message.id === 'number' ? message.id : -1;
    const entry = this.#entries.get(id);
    if (!entry) return;
    if (message.op === 'spawned' && typeof message.pid === 'number') entry.handlers.onSpawn(message.pid);
    else if (message.op === 'spawn-failed') {
      this.#end(id, { code: null, signal: null, stderr: '', error: String(message.error) });
    } else if (message.op === 'exited') {
      this.#end(id, {
        code: typeof message.code === 'number' ? message.code : null,
        signal: typeof message.signal === 'string' ? message.signal : null,
        stderr: typeof message.stderr === 'string' ? message.stderr : '',
        error: null,
      });
    }
  }

  #end(id: number, end: LaunchedProcessEnd): void {
    const entry = this.#entries.get(id);
    if (!entry || entry.ended) return;
    entry.ended = true;
    this.#entries.delete(id);
    entry.handlers.onExit(end);
  }

  #onConnection(socket: Socket): void {
    socket.on('error', () => {});
    const timer = setTimeout(() => socket.destroy(), HELLO_TIMEOUT_MS);
    let received: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = received.length === 0 ? chunk : Buffer.concat([received, chunk]);
      if (received.length < HELLO_BYTES) return;
      socket.off('data', onData);
      socket.off('end', onEnd);
      clearTimeout(timer);
      const token = received.subarray(0, TOKEN_CHARS);
      const id = Number(received.subarray(TOKEN_CHARS, HELLO_BYTES).toString('ascii').trim());
      const entry = this.#entries.get(id);
      if (!timingSafeEqual(token, Buffer.from(this.#token, 'ascii')) || !entry || entry.connected) {
        socket.destroy();
        return;
      }
      entry.connected = true;
      // Swapped within this 'data' event: no later chunk can be missed.
      entry.handlers.onConnection(socket, received.subarray(HELLO_BYTES));
    };
    const onEnd = () => {
      clearTimeout(timer);
      socket.destroy();
    };
    socket.on('data', onData);
    socket.on('end', onEnd);
  }
}
