/**
 * Engines in child processes, for the crash tests: they run on the system clock in processes of
 * their own, so the test can SIGKILL them, and waiting on them is waiting in real time.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/**
 * Starts `script` (TypeScript, through tsx, with the workspace's sources) with `args`, and
 * resolves once it prints `ready`; rejects with its stderr if it exits first.
 */
export function startChildEngine(script: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', '--conditions=ferry-source', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let err = '';
    proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    proc.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) resolve(proc);
    });
    proc.on('exit', (code, signal) => reject(new Error(`${script} exited (${code ?? signal}) before it was ready: ${err}`)));
  });
}

/**
 * Waits until `check` holds, looking every `stepMs` of real time: the processes under test (and
 * a killed engine's leases, which expire on their clock) move in real time, which is the thing
 * under test here, not a stand-in for virtual time.
 */
export async function untilReal(check: () => boolean | Promise<boolean>, what: string, ms = 60_000, stepMs = 20): Promise<void> {
  for (let waited = 0; waited < ms; waited += stepMs) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, stepMs));
  }
  throw new Error(`timed out waiting for ${what}`);
}
