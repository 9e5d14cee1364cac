import type { SoakReport } from './report.ts';
import { AUTH_SERIES, GATEWAY_SERIES } from './traffic.ts';

/**
 * The soak drawn as one SVG, by hand (no plotting dependency): the account
 * service's latencies, the gateway's, both p50 (solid) and p99 (dashed) per
 * window on a log scale, then each service's resident memory (every second)
 * and used heap (every window). The warm-up is shaded.
 */
const WIDTH = 960;
const PANEL_H = 230;
const LEFT = 70;
const PLOT_W = 690;
const LEGEND_X = LEFT + PLOT_W + 20;
const TOP = 56;
const GAP = 70;
const COLOURS = ['#1f5fa8', '#c2362b', '#2a8a3e', '#7b4fa8', '#d9820f', '#5b5b5b'];

interface Line {
  label: string;
  colour: string;
  dashed?: boolean;
  dotted?: boolean;
  points: [number, number][];
}

interface Panel {
  title: string;
  yLabel: string;
  log: boolean;
  lines: Line[];
  legend: { label: string; colour: string; dashed?: boolean; dotted?: boolean }[];
}

const dash = (item: { dashed?: boolean; dotted?: boolean }) =>
  item.dashed ? ' stroke-dasharray="5 3"' : item.dotted ? ' stroke-dasharray="1.5 2.5"' : '';
const esc = (s: string) => s.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
const num = (x: number) => (Math.round(x * 10) / 10).toString();

function niceStep(range: number, ticks: number): number {
  const raw = range / ticks;
  const mag = 10 ** Math.floor(Math.log10(raw));
  return ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
}

function logTicks(min: number, max: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= min && v <= max) out.push(v);
    }
  }
  return out;
}

const tickText = (v: number) => (v >= 1 ? String(v) : v.toPrecision(1));

function drawPanel(panel: Panel, top: number, xMax: number, warmupS: number, minutes: boolean): string[] {
  const values = panel.lines.flatMap((l) => l.points.map(([, y]) => y)).filter((y) => Number.isFinite(y) && (!panel.log || y > 0));
  let yMin: number;
  let yMax: number;
  let ticks: number[];
  if (panel.log) {
    yMin = 10 ** Math.floor(Math.log10(Math.min(...values)));
    yMax = 10 ** Math.ceil(Math.log10(Math.max(...values)));
    ticks = logTicks(yMin, yMax);
  } else {
    yMin = 0;
    const step = niceStep(Math.max(...values) * 1.1, 5);
    yMax = Math.ceil((Math.max(...values) * 1.1) / step) * step;
    ticks = Array.from({ length: Math.round(yMax / step) + 1 }, (_, i) => i * step);
  }
  const x = (s: number) => LEFT + (s / xMax) * PLOT_W;
  const y = (v: number) =>
    top + PANEL_H - (panel.log ? (Math.log10(v) - Math.log10(yMin)) / (Math.log10(yMax) - Math.log10(yMin)) : (v - yMin) / (yMax - yMin)) * PANEL_H;
  const out: string[] = [];
  out.push(`<text x="${LEFT}" y="${top - 10}" class="title">${esc(panel.title)}</text>`);
  out.push(`<rect x="${x(0)}" y="${top}" width="${x(warmupS) - x(0)}" height="${PANEL_H}" fill="#eeeeee"/>`);
  out.push(`<text x="${x(warmupS / 2)}" y="${top + PANEL_H - 6}" class="small" text-anchor="middle">warm-up</text>`);
  // Over more than three decades only the powers of ten are labelled (the 2 and 5 lines stay, fainter).
  const crowded = panel.log && Math.log10(yMax / yMin) > 3;
  for (const t of ticks) {
    const major = !crowded || Number.isInteger(Math.log10(t));
    out.push(`<line x1="${LEFT}" x2="${LEFT + PLOT_W}" y1="${y(t)}" y2="${y(t)}" stroke="${major ? '#d4d4d4' : '#eeeeee'}"/>`);
    if (major) out.push(`<text x="${LEFT - 6}" y="${y(t) + 4}" class="small" text-anchor="end">${tickText(t)}</text>`);
  }
  const xStep = niceStep(minutes ? xMax / 60 : xMax, 8) * (minutes ? 60 : 1);
  for (let s = 0; s <= xMax + 1e-9; s += xStep) {
    out.push(`<line x1="${x(s)}" x2="${x(s)}" y1="${top + PANEL_H}" y2="${top + PANEL_H + 4}" stroke="#333333"/>`);
    out.push(`<text x="${x(s)}" y="${top + PANEL_H + 17}" class="small" text-anchor="middle">${num(minutes ? s / 60 : s)}</text>`);
  }
  out.push(`<rect x="${LEFT}" y="${top}" width="${PLOT_W}" height="${PANEL_H}" fill="none" stroke="#333333"/>`);
  out.push(
    `<text x="${LEFT + PLOT_W / 2}" y="${top + PANEL_H + 34}" class="axis" text-anchor="middle">time since the traffic started (${minutes ? 'minutes' : 's'})</text>`,
  );
  out.push(
    `<text transform="translate(${LEFT - 48} ${top + PANEL_H / 2}) rotate(-90)" class="axis" text-anchor="middle">${esc(panel.yLabel)}</text>`,
  );
  for (const line of panel.lines) {
    const pts = line.points.filter(([, v]) => Number.isFinite(v) && (!panel.log || v > 0));
    if (pts.length === 0) continue;
    const d = pts.map(([s, v], i) => `${i ? 'L' : 'M'}${x(s).toFixed(1)},${y(v).toFixed(1)}`).join(' ');
    out.push(
      `<path d="${d}" fill="none" stroke="${line.colour}" stroke-width="1.6"${dash(line)}><title>${esc(line.label)}</title></path>`,
    );
  }
  panel.legend.forEach((item, i) => {
    const ly = top + 8 + i * 18;
    out.push(
      `<line x1="${LEGEND_X}" x2="${LEGEND_X + 26}" y1="${ly}" y2="${ly}" stroke="${item.colour}" stroke-width="2"${dash(item)}/>`,
    );
    out.push(`<text x="${LEGEND_X + 32}" y="${ly + 4}" class="small">${esc(item.label)}</text>`);
  });
  return out;
}

function latencyPanel(report: SoakReport, title: string, series: readonly string[]): Panel {
  const lines: Line[] = [];
  const legend: Panel['legend'] = [];
  series.forEach((s, i) => {
    const colour = COLOURS[i % COLOURS.length]!;
    const at = (pick: 'p50' | 'p99'): [number, number][] =>
      report.windows.filter((w) => w.latencyMs[s]).map((w) => [w.endS, w.latencyMs[s]![pick]]);
    lines.push({ label: `${s} p50`, colour, points: at('p50') }, { label: `${s} p99`, colour, dashed: true, points: at('p99') });
    legend.push({ label: s, colour });
  });
  legend.push({ label: 'p50', colour: '#333333' }, { label: 'p99 (for under 100 requests', colour: '#333333', dashed: true });
  legend.push({ label: '  a window: its slowest)', colour: 'none' });
  return { title, yLabel: 'latency per window (ms, log scale)', log: true, lines, legend };
}

function memoryPanel(report: SoakReport): Panel {
  const services = ['auth', 'gateway'];
  const lines: Line[] = [];
  const legend: Panel['legend'] = [];
  services.forEach((name, i) => {
    const colour = COLOURS[i]!;
    lines.push({ label: `${name} RSS`, colour, points: report.rssSamples.map((s) => [s.atS, s.rssMiB[name]!]) });
    lines.push({ label: `${name} used heap`, colour, dashed: true, points: report.windows.map((w) => [w.endS, w.heapUsedMiB[name] ?? Number.NaN]) });
    lines.push({
      label: `${name} V8 heap reserved`,
      colour,
      dotted: true,
      points: report.windows.map((w) => [w.endS, w.heapTotalMiB[name] ?? Number.NaN]),
    });
    const m = report.verdict.memory[name]!;
    legend.push({ label: `${name === 'auth' ? 'account service' : 'gateway'} RSS`, colour });
    legend.push({ label: `  ${m.growthMiB >= 0 ? '+' : ''}${num(m.growthMiB)} MiB after warm-up`, colour: 'none' });
  });
  legend.push({ label: 'used heap (/metrics)', colour: '#333333', dashed: true });
  legend.push({ label: 'V8 heap reserved (/metrics)', colour: '#333333', dotted: true });
  return { title: 'Memory of each service process', yLabel: 'MiB', log: false, lines, legend };
}

export function drawPlot(report: SoakReport): string {
  const fake = report.fakeBehaviour;
  const provider = `fake provider: ${fake['latencyMs']} ms, streams ${fake['chunks']} events ${fake['chunkDelayMs']} ms apart`;
  const panels = [
    latencyPanel(report, 'Account service: p50 and p99 per window', AUTH_SERIES),
    latencyPanel(report, `Gateway (${provider}): p50 and p99 per window`, GATEWAY_SERIES),
    memoryPanel(report),
  ];
  const height = TOP + panels.length * (PANEL_H + GAP) + 10;
  const xMax = Math.max(report.seconds, report.windows.at(-1)?.endS ?? 0);
  const minutes = xMax >= 120;
  const requests = report.windows.reduce((a, w) => a + w.requests, 0);
  const v = report.verdict;
  const duration = report.seconds >= 120 ? `${num(report.seconds / 60)} min` : `${report.seconds} s`;
  const heading = `Soak, ${report.date}: ${duration}, ${requests} requests (${num(requests / report.seconds)}/s), ${v.errors} errors`;
  const subheading = `${report.backend}; ${report.machine}, Node ${report.node}`;
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" role="img">`,
    `<title>${esc(`${heading}: latency per window of each kind of traffic (p50 and p99), and each service's memory`)}</title>`,
    '<style>.title{font-size:14px;font-weight:bold}.axis{font-size:12px}.small{font-size:11px}</style>',
    `<rect width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${LEFT}" y="20" class="title">${esc(heading)}</text>`,
    `<text x="${LEFT}" y="38" class="small">${esc(subheading)}</text>`,
    ...panels.flatMap((p, i) => drawPanel(p, TOP + 10 + i * (PANEL_H + GAP), xMax, report.warmupS, minutes)),
    '</svg>',
  ];
  return `${svg.join('\n')}\n`;
}
