import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

/** A running S3-protocol server on loopback (s3rver), for tests. */
export interface TestS3Server {
  /** `http://127.0.0.1:<port>`: give it as the client's endpoint, with path-style addressing. */
  readonly endpoint: string;
  /** Any region: the server does not check it. */
  readonly region: string;
  /** The credentials the server accepts (it verifies request signatures with them). */
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /**
   * The AWS SDK client options that reach this server (`new S3Client(server.clientConfig)`):
   * path-style, its credentials, and request checksums only where required, since s3rver
   * mishandles the SDK's default checksums on streamed bodies. A plain object, so the kit does
   * not depend on the SDK.
   */
  readonly clientConfig: {
    endpoint: string;
    region: string;
    forcePathStyle: true;
    credentials: { accessKeyId: string; secretAccessKey: string };
    requestChecksumCalculation: 'WHEN_REQUIRED';
    responseChecksumValidation: 'WHEN_REQUIRED';
  };
  /** Stops the server and removes its files. */
  stop(): Promise<void>;
}

/** The credentials s3rver knows by default. */
const ACCESS_KEY = 'S3RVER';

/**
 * Starts s3rver in a child process on 127.0.0.1 and a free port, storing objects in a fresh
 * temporary directory. Two traps of these machines are handled here:
 * - its ListObjectsV2 continuation tokens use DES, which Node's OpenSSL 3 refuses (a 500 on the
 *   second page): the child runs with `--openssl-legacy-provider`;
 * - it runs in its own process, so a test's fake timers or virtual clock never reach it.
 * The child lives until its stdin closes, so it cannot outlive the test process.
 *
 * `clientConfig` holds the SDK options a client needs to reach it.
 */
export async function startTestS3(): Promise<TestS3Server> {
  const directory = await mkdtemp(join(tmpdir(), 'ferry-test-s3-'));
  const s3rver = pathToFileURL(createRequire(import.meta.url).resolve('s3rver')).href;
  const program = `
    import S3rver from ${JSON.stringify(s3rver)};
    const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: ${JSON.stringify(directory)} });
    const { port } = await server.run();
    process.stdout.write(JSON.stringify({ port }) + '\\n');
    process.stdin.on('end', () => server.close().finally(() => process.exit(0)));
    process.stdin.resume();
  `;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '--input-type=module', '-e', program], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let port: number;
  try {
    port = await firstLine(child);
  } catch (error) {
    child.kill('SIGKILL');
    await rm(directory, { recursive: true, force: true });
    throw new Error(`s3rver did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  // The test process may end without calling stop(): the closed stdin ends the child then.
  child.unref();
  (child.stdin as unknown as { unref?(): void }).unref?.();
  (child.stdout as unknown as { unref?(): void }).unref?.();
  (child.stderr as unknown as { unref?(): void }).unref?.();
  let stopping: Promise<void> | undefined;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    region: 'us-east-1',
    accessKeyId: ACCESS_KEY,
    secretAccessKey: ACCESS_KEY,
    clientConfig: {
      endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: ACCESS_KEY },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    },
    stop: () =>
      (stopping ??= (async () => {
        const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
        child.stdin!.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
        await rm(directory, { recursive: true, force: true });
      })()),
  };
}

/** The port the child prints when it listens, or an error if it exits or stays silent for 20 s. */
function firstLine(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const timer = setTimeout(() => reject(new Error('no answer in 20 s')), 20_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited with ${code}`));
    });
    lines.once('line', (line) => {
      clearTimeout(timer);
      lines.close();
      try {
        const { port } = JSON.parse(line) as { port: number };
        resolve(port);
      } catch {
        reject(new Error(`unexpected output ${JSON.stringify(line)}`));
      }
    });
  });
}
