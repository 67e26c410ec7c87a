import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** The header the mock cluster is built against: Debian's `librdkafka-dev`. */
export const RDKAFKA_MOCK_HEADER = '/usr/include/librdkafka/rdkafka_mock.h';

/**
 * A Kafka mock cluster (librdkafka's `rd_kafka_mock_cluster`) in a child process: it speaks the
 * Kafka protocol on real loopback ports and lives until its stdin closes. Topics are created
 * when it starts, since the mock has no admin `createTopics`.
 */
const MOCK_SOURCE = `
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
  char errstr[512];
  int brokers = argc > 1 ? atoi(argv[1]) : 1;
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "0", errstr, sizeof errstr);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!rk) { fprintf(stderr, "%s\\n", errstr); return 1; }
  rd_kafka_mock_cluster_t *cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (!cluster) { fprintf(stderr, "could not create the mock cluster\\n"); return 1; }
  for (int i = 2; i < argc; i++) {
    char *spec = strdup(argv[i]);
    char *colon = strchr(spec, ':');
    int partitions = 1;
    if (colon) { *colon = 0; partitions = atoi(colon + 1); }
    if (rd_kafka_mock_topic_create(cluster, spec, partitions, brokers < 3 ? brokers : 3) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      fprintf(stderr, "could not create topic %s\\n", spec);
      return 1;
    }
    free(spec);
  }
  printf("%s\\n", rd_kafka_mock_cluster_bootstraps(cluster));
  fflush(stdout);
  char buf[256];
  while (fread(buf, 1, sizeof buf, stdin) > 0) {}
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return 0;
}
`;

/** A running Kafka mock cluster. */
export interface KafkaMock {
  /** `host:port` of each broker, all on 127.0.0.1. */
  readonly brokers: string[];
  /** Stops the cluster (closing its stdin) and waits for it to exit. */
  stop(): Promise<void>;
}

/** Options of {@link startKafkaMock}. */
export interface KafkaMockOptions {
  /** Brokers in the cluster (default 1). */
  brokers?: number;
  /** Topics to create, with their partition counts (default 1 each). */
  topics?: Record<string, number>;
}

/**
 * Starts a Kafka mock cluster on loopback. The first call builds the small C program with
 * `cc` against librdkafka (`apt-get install librdkafka-dev`, which `npm test` installs when it is
 * missing) into a directory under the OS temp directory keyed by its source, so later calls and
 * other test workers reuse it.
 *
 * The mock does not support admin `createTopics`, idempotent or transactional producers, or
 * `describeGroups`; it creates any topic it is asked about (4 partitions), and keeps only the
 * newest 5 MiB of each partition (older messages go, as by retention: spread a large test over
 * partitions). Joining a consumer group takes about 3 s (a fixed delay in the mock). Give
 * kafkajs clients `sessionTimeout: 6000, heartbeatInterval: 500` and consumers
 * `maxWaitTimeInMs: 100`, or a disconnect can hang for half a minute.
 *
 * @throws Error naming what is missing when librdkafka's headers or a C compiler are not there.
 */
export async function startKafkaMock(options: KafkaMockOptions = {}): Promise<KafkaMock> {
  const binary = buildMock();
  const topics = Object.entries(options.topics ?? {}).map(([name, partitions]) => `${name}:${partitions}`);
  const child = spawn(binary, [String(options.brokers ?? 1), ...topics], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const bootstraps = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    const timer = setTimeout(() => reject(new Error('the Kafka mock cluster did not start in 20 s')), 20_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the Kafka mock cluster exited with ${code}: ${stderr}`));
    });
    lines.once('line', (line) => {
      clearTimeout(timer);
      lines.close();
      resolve(line.trim());
    });
  }).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw error;
  });
  // Not kept alive by its pipes; a test process that ends without stop() closes its stdin.
  child.unref();
  for (const stream of [child.stdin, child.stdout, child.stderr] as unknown as { unref?(): void }[]) stream.unref?.();
  let stopping: Promise<void> | undefined;
  return {
    brokers: bootstraps.split(',').filter(Boolean),
    stop: () =>
      (stopping ??= new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.stdin.end();
      })),
  };
}

/** The built mock program, compiled on first use; its path. */
function buildMock(): string {
  if (!existsSync(RDKAFKA_MOCK_HEADER)) {
    throw new Error(`${RDKAFKA_MOCK_HEADER} is missing: install librdkafka-dev (apt-get install -y librdkafka-dev). \`npm test\` installs it when it can.`);
  }
  const dir = join(tmpdir(), `ferry-kafka-mock-${createHash('sha256').update(MOCK_SOURCE).digest('hex').slice(0, 16)}`);
  const binary = join(dir, 'kafka-mock');
  if (existsSync(binary)) return binary;
  mkdirSync(dir, { recursive: true });
  const source = join(dir, `kafka-mock-${process.pid}.c`);
  const partial = `${binary}.${process.pid}`;
  writeFileSync(source, MOCK_SOURCE);
  const built = spawnSync('cc', ['-O1', '-o', partial, source, '-lrdkafka'], { encoding: 'utf8' });
  if (built.error || built.status !== 0) {
    throw new Error(`building the Kafka mock cluster failed (is a C compiler installed?): ${built.error?.message ?? built.stderr}`);
  }
  // Another worker may have built it meanwhile: a rename replaces it atomically either way.
  renameSync(partial, binary);
  return binary;
}
