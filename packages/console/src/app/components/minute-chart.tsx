import type { JSX } from 'preact';
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import type { PipelineStats } from '../records.js';
import { count } from '../format.js';

type Minute = PipelineStats['per_minute'][number];
type Figure = keyof Omit<Minute, 'minute'>;

/**
 * The lines, in the order they are drawn: Written comes after Read and is dashed, so where the
 * two are equal (every event read was written) the blue line shows between the green dashes
 * instead of disappearing under it. The legend is the page's own (see {@link Legend}), in the
 * same colours (style.css, `.swatch-*`).
 */
const SERIES: Array<{ key: Figure; label: string; stroke: string; dash?: number[] }> = [
  { key: 'events_read', label: 'Read', stroke: '#1f5fbf' },
  { key: 'events_written', label: 'Written', stroke: '#1f7a4d', dash: [6, 4] },
  { key: 'events_dead_lettered', label: 'Dead-lettered', stroke: '#b3261e' },
];

function columns(minutes: Minute[], keys: Figure[]): uPlot.AlignedData {
  return [minutes.map((m) => Date.parse(m.minute) / 1000), ...keys.map((k) => minutes.map((m) => m[k]))];
}

/** True when Written equals Read in every minute with events: the two lines lie on each other. */
function coincide(minutes: Minute[]): boolean {
  return minutes.some((m) => m.events_read > 0) && minutes.every((m) => m.events_written === m.events_read);
}

/** A sentence that says what the chart shows, for those who cannot see it. */
function summary(minutes: Minute[]): string {
  const written = minutes.reduce((n, m) => n + m.events_written, 0);
  const peak = minutes.reduce((n, m) => Math.max(n, m.events_written), 0);
  const same = coincide(minutes) ? ' Written equals read in every minute.' : '';
  return `${count(written)} events written in the last ${minutes.length} minutes, at most ${count(peak)} in a minute.${same}`;
}

/** The chart's legend: a swatch per line, and a word when Written lies on Read. */
function Legend({ minutes }: { minutes: Minute[] | undefined }): JSX.Element {
  const same = minutes ? coincide(minutes) : false;
  return (
    <ul class="chart-legend" aria-hidden="true">
      {SERIES.map((s) => (
        <li key={s.key}>
          <span class={`swatch swatch-${s.key}`} />
          {s.label}
          {s.key === 'events_written' && same ? <span class="muted"> (equal to Read in every minute)</span> : null}
        </li>
      ))}
    </ul>
  );
}

/**
 * Events per minute, drawn by uPlot on a canvas of a fixed size (so nothing moves when the data
 * arrives). `compact` is the sparkline of the pipelines list: events written only, no axes.
 */
export function MinuteChart({ minutes, compact = false }: { minutes: Minute[] | undefined; compact?: boolean }): JSX.Element {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const series = compact ? SERIES.filter((s) => s.key === 'events_written') : SERIES;

  useEffect(() => {
    const element = box.current;
    if (!element || !minutes) return;
    const data = columns(minutes, series.map((s) => s.key));
    if (plot.current) {
      plot.current.setData(data);
      return;
    }
    const width = Math.max(compact ? 120 : 240, element.clientWidth);
    const options: uPlot.Options = compact
      ? {
          width: 120,
          height: 28,
          legend: { show: false },
          cursor: { show: false },
          select: { show: false, left: 0, top: 0, width: 0, height: 0 },
          axes: [{ show: false }, { show: false }],
          scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
          series: [{}, { stroke: series[0]!.stroke, fill: 'rgba(31,122,77,0.15)', width: 1.5, points: { show: false } }],
        }
      : {
          width,
          height: 180,
          // The console shows every time in UTC, as the API gives them.
          tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
          legend: { show: false },
          scales: { y: { range: (_u, _min, max) => [0, Math.max(1, max)] } },
          axes: [{ values: (_u, splits) => splits.map((v) => new Date(v * 1000).toISOString().slice(11, 16)) }, { size: 56 }],
          series: [
            { label: 'Minute (UTC)', value: (_u, v) => (v === null ? '' : new Date(v * 1000).toISOString().slice(11, 16)) },
            ...series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, ...(s.dash ? { dash: s.dash } : {}), points: { show: false } })),
          ],
        };
    plot.current = new uPlot(options, data, element);
  }, [minutes]);

  useEffect(() => {
    const element = box.current;
    // The full chart follows its container's width (a resized window, a zoom).
    const observer = compact || !element ? undefined : new ResizeObserver(() => plot.current?.setSize({ width: Math.max(240, element.clientWidth), height: 180 }));
    if (observer && element) observer.observe(element);
    return () => {
      observer?.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  return (
    <figure class={compact ? 'chart chart-compact' : 'chart'} role="img" aria-label={minutes ? summary(minutes) : 'Events per minute: loading.'}>
      <div ref={box} class="chart-canvas" />
      {compact ? null : <Legend minutes={minutes} />}
    </figure>
  );
}
