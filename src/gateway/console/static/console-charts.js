// The charts of the Overview and Usage pages, loaded only there, after chart.umd.min.js (both deferred, in order),
// and one nicety of their period forms.
// Each `.chart-box[data-chart]` names a <script type="application/json"> block holding its data (usage-view.ts
// ChartData). The same figures are in a table beside the chart: without this script, that table is the chart.

/** Dollars as the pages write them: cents from $1 on, two significant digits below. */
function formatUsd(n) {
  const abs = Math.abs(n);
  const digits = abs === 0 || abs >= 0.995 ? 2 : Math.min(6, Math.max(2, 1 - Math.floor(Math.log10(abs))));
  return new Intl.NumberFormat('en-US', { style: 'currency', currency: 'USD', minimumFractionDigits: 2, maximumFractionDigits: digits }).format(n);
}

/** A long label shortened on an axis (the tooltip and the table keep it whole). */
const shorten = (text) => (text.length > 28 ? `${text.slice(0, 27)}…` : text);

/**
 * Chart.js sizes its canvas through the element's style attribute; the
 * stylesheet sizes it instead (`.chart-box canvas`), so no element of the
 * page keeps a style attribute, as on every other page of the console.
 */
const noStyleAttribute = {
  id: 'noStyleAttribute',
  afterRender(chart) {
    if (chart.canvas.hasAttribute('style')) chart.canvas.removeAttribute('style');
  },
};

function drawCharts() {
  const Chart = window.Chart;
  if (!Chart) return;
  const css = getComputedStyle(document.documentElement);
  const cssColor = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  const colors = { spend: cssColor('--chart-spend', '#1f4fd1'), without: cssColor('--chart-without', '#9a5b00') };
  const muted = cssColor('--muted', '#545b66');
  const line = cssColor('--line', '#d5d9e0');
  const reduceMotion = window.matchMedia('(prefers-reduced-motion: reduce)').matches;

  for (const box of document.querySelectorAll('.chart-box[data-chart]')) {
    const source = document.getElementById(box.dataset.chart);
    if (!source) continue;
    let data;
    try {
      data = JSON.parse(source.textContent);
    } catch {
      continue;
    }
    const canvas = document.createElement('canvas');
    canvas.setAttribute('role', 'img');
    canvas.setAttribute('aria-label', data.label);
    box.append(canvas);
    const horizontal = data.kind === 'bar';
    const money = { color: muted, callback: (value) => formatUsd(Number(value)) };
    // Labels skipped to fit the width (a phone shows a few hours, not all 24), with room between them.
    const names = { color: muted, autoSkip: true, autoSkipPadding: 16, maxRotation: 0, maxTicksLimit: Math.max(3, Math.floor(canvas.clientWidth / 110)), callback(value) { return shorten(String(this.getLabelForValue(value))); } };
    new Chart(canvas, {
      type: data.kind,
      data: {
        labels: data.labels,
        datasets: data.series.map((s) => ({
          label: s.name,
          data: s.values,
          borderColor: colors[s.role],
          backgroundColor: colors[s.role],
          borderWidth: 2,
          borderDash: s.role === 'without' && !horizontal ? [6, 4] : [],
          pointRadius: data.labels.length > 40 ? 0 : 2,
          tension: 0.2,
        })),
      },
      options: {
        animation: reduceMotion ? false : { duration: 250 },
        maintainAspectRatio: false,
        indexAxis: horizontal ? 'y' : 'x',
        interaction: { mode: 'index', intersect: false },
        scales: {
          x: { ticks: horizontal ? money : names, grid: { color: line }, beginAtZero: horizontal },
          y: { ticks: horizontal ? names : money, grid: { color: line }, beginAtZero: !horizontal },
        },
        plugins: {
          legend: { labels: horizontal ? { color: muted } : { color: muted, usePointStyle: true, pointStyle: 'line' } },
          tooltip: { callbacks: { label: (item) => `${item.dataset.label}: ${formatUsd(item.parsed[horizontal ? 'x' : 'y'])}` } },
        },
      },
      plugins: [noStyleAttribute],
    });
    // The figures stay one press away (their <details>), now that the chart shows them.
    box.closest('section')?.querySelector('details.chart-figures[open]')?.removeAttribute('open');
  }
}

/** A date typed into a period form means custom dates: the period's choice follows. */
function followDates() {
  const period = document.getElementById('period');
  if (!(period instanceof HTMLSelectElement)) return;
  for (const id of ['from', 'to']) {
    document.getElementById(id)?.addEventListener('change', () => {
      period.value = 'custom';
    });
  }
}

// Loaded with `defer`: the document is parsed by now.
drawCharts();
followDates();
