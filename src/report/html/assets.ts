// The page's style and its one script, inline: the report is opened on hosts without internet.

/** Colors of the GPUs on a host's overview (cycled past eight). */
export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

export const STYLE = `
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f4f5f7; }
main { max-width: 1280px; margin: 0 auto; padding: 1.2em 1.5em 3em; }
h1 { font-size: 1.45em; margin: .2em 0; } h2 { font-size: 1.15em; margin: 1.6em 0 .5em; } h3 { font-size: 1em; margin: 0 0 .3em; }
small, .meta { color: #6b7280; font-weight: normal; } .meta { margin: 0 0 1em; }
a { color: #1f5fbf; text-decoration: none; } a:hover { text-decoration: underline; }
.panel { background: #fff; border: 1px solid #dde1e6; border-radius: 6px; padding: .8em 1em; margin: .8em 0; }
ul.findings { list-style: none; padding: 0; margin: 0; } ul.findings li { padding: .3em 0 .3em .7em; border-left: 4px solid #d0a000; margin: .3em 0; }
ul.findings li.memory_growth, ul.findings li.errors { border-color: #c62828; } ul.findings b { font-weight: 600; }
p.finding { margin: .2em 0; font-size: .93em; } p.finding::before { content: "▲ "; color: #c07a00; }
table.summary { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
table.summary th, table.summary td { padding: .35em .5em; border-bottom: 1px solid #e5e7eb; text-align: left; white-space: nowrap; }
table.summary th { font-weight: 600; color: #4b5563; font-size: .9em; border-bottom: 2px solid #d1d5db; white-space: normal; vertical-align: bottom; } .n { text-align: right !important; }
table.jobs { font-size: .9em; } table.jobs td { white-space: normal; } table.jobs th, table.jobs td { padding: .35em .3em; }
.scroll { overflow-x: auto; }
details { margin-top: .6em; } summary { cursor: pointer; color: #1f5fbf; }
.charts { display: flex; flex-wrap: wrap; gap: .6em 1.2em; } figure { margin: 0; } figure.chart { flex: 1 1 400px; min-width: 0; } svg.chart { width: 100%; height: auto; } figcaption { font-size: .88em; color: #374151; font-weight: 600; }
.legend { font-size: .85em; color: #374151; margin: .2em 0 .4em; } .legend span { margin-right: 1em; white-space: nowrap; } .legend i { display: inline-block; width: 12px; height: 3px; vertical-align: middle; margin-right: .3em; }
svg.chart { display: block; background: #fff; } svg.chart text { font-size: 10px; fill: #6b7280; } svg.chart text.major { fill: #374151; font-weight: 600; }
.grid { stroke: #eceef1; } .grid.major { stroke: #d5d9de; } .axis { stroke: #9ca3af; } .cursor { stroke: #6b7280; stroke-dasharray: 3 2; }
.line { fill: none; stroke-width: 1.6; stroke-linejoin: round; stroke-linecap: round; }
rect.gap { fill: #9ca3af; } rect.failed { fill: #e53935; }
.key.severity i { width: 4px; height: 1em; } .key.severity i.act { background: #c62828; } .key.severity i.look { background: #d0a000; }
.key { font-size: .82em; color: #6b7280; } .legend svg { vertical-align: middle; margin-right: .3em; } .key i { display: inline-block; width: 12px; height: 10px; vertical-align: middle; margin: 0 .3em 0 .8em; }
.tip { position: absolute; pointer-events: none; background: rgba(24, 28, 36, .92); color: #fff; font-size: 12px; padding: .4em .6em; border-radius: 4px; line-height: 1.5; }
.tip .t { color: #cbd5e1; } .tip i { display: inline-block; width: 9px; height: 9px; margin-right: .35em; }
`;

/** Hover: a cursor on the chart and a tooltip with the bucket's time, every line's value, and its gap or failures. */
export const SCRIPT = `
(() => {
  const zone = JSON.parse(document.getElementById('zone').textContent);
  const DAYS = ['Sun','Mon','Tue','Wed','Thu','Fri','Sat'], MONTHS = ['Jan','Feb','Mar','Apr','May','Jun','Jul','Aug','Sep','Oct','Nov','Dec'];
  const pad = (n) => String(n).padStart(2, '0');
  // The report's zone, not the viewer's: the labels match the axis and the tables.
  const local = (t) => { let off = zone[0][1]; for (const [at, o] of zone) if (t >= at) off = o; return new Date(t + off * 60000); };
  const when = (t) => { const d = local(t); return DAYS[d.getUTCDay()] + ' ' + d.getUTCDate() + ' ' + MONTHS[d.getUTCMonth()] + ' ' + pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()); };
  const hhmm = (t) => { const d = local(t); return pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes()); };
  const fmt = (v) => (Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 10 ? v.toFixed(1) : v.toFixed(2));
  const tip = document.createElement('div');
  tip.className = 'tip';
  tip.hidden = true;
  document.body.append(tip);
  const line = (parts) => { const div = document.createElement('div'); for (const p of parts) div.append(p); return div; };
  for (const svg of document.querySelectorAll('svg[data-chart]')) {
    const c = JSON.parse(svg.dataset.chart);
    const n = c.gaps.length;
    const cursor = svg.querySelector('.cursor');
    const hide = () => { tip.hidden = true; cursor.setAttribute('visibility', 'hidden'); };
    svg.addEventListener('mouseleave', hide);
    svg.addEventListener('mousemove', (event) => {
      const box = svg.getBoundingClientRect();
      const x = (event.clientX - box.left) * (svg.viewBox.baseVal.width / box.width);
      const i = Math.floor(((x - c.left) / c.plotWidth) * n);
      if (i < 0 || i >= n) return hide();
      const cx = c.left + ((i + 0.5) / n) * c.plotWidth;
      cursor.setAttribute('x1', cx); cursor.setAttribute('x2', cx); cursor.setAttribute('visibility', 'visible');
      const from = c.x0 + i * c.step;
      const head = document.createElement('span');
      head.className = 't';
      head.textContent = when(from) + '–' + hhmm(from + c.step);
      const rows = [line([head])];
      for (const l of c.lines) {
        const swatch = document.createElement('i');
        swatch.style.background = l.color;
        const v = l.values[i];
        rows.push(line([swatch, l.name + ': ' + (v === null ? 'no value' : fmt(v) + ' ' + c.unit)]));
      }
      if (c.gaps[i] >= 0.02) rows.push(line([c.gaps[i] >= 0.99 ? 'no samples (gap)' : Math.round(c.gaps[i] * 100) + ' % of it in a gap']));
      if (c.errors[i] >= 0.005) rows.push(line([Math.round(c.errors[i] * 100) + ' % of samples failed']));
      tip.replaceChildren(...rows);
      tip.hidden = false;
      tip.style.left = Math.min(event.pageX + 14, document.documentElement.scrollWidth - tip.offsetWidth - 8) + 'px';
      tip.style.top = event.pageY + 14 + 'px';
    });
  }
})();
`;
