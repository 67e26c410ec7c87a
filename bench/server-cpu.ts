import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU seconds used so far by the processes named `postgres` (the server's backends and WAL
 * senders): on a 2-core machine the server and the engine share the cores, so the difference
 * of two readings shows who was busy. Zero where /proc is not there.
 */
export function serverCpuSeconds(): number {
  let ticks = 0;
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((name) => /^\d+$/.test(name));
  } catch {
    return 0;
  }
  for (const pid of pids) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const close = stat.lastIndexOf(')');
      if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
      const fields = stat.slice(close + 2).split(' ');
      // utime and stime (fields 14 and 15 of stat; 12 and 13 after the name), in clock ticks.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100;
}
