/**
 * Prints one benchmark result as a JSON line on stdout, the format `npm run bench` collects.
 * With a baseline measured in the same run, the line carries it and the ratio value/baseline,
 * since absolute figures on a shared 2-core machine are noise and ratios are what compare.
 */
export function emit(bench: string, kase: string, value: number, unit: string, baseline?: number): void {
  const line: Record<string, unknown> = { bench, case: kase, value: Math.round(value * 100) / 100, unit };
  if (baseline !== undefined) {
    line.baseline = Math.round(baseline * 100) / 100;
    line.ratio = Math.round((value / baseline) * 1000) / 1000;
  }
  console.log(JSON.stringify(line));
}
