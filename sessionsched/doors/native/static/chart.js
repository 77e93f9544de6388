// Charts, drawn by uPlot (vendor/, loaded by the page as a classic script: the global
// ``uPlot``). A stacked chart is cumulative series drawn topmost first, each filled down to the
// axis in an opaque colour: each band is what its series adds; the legend shows the series'
// own figure at the cursor, not the running sum.

export const COLORS = ["#3a7bd5", "#e08a1e", "#2e8540", "#b3261e", "#7b4fb5", "#1f9bb5",
  "#b5a21f", "#59616b", "#d36bb0", "#6b8e23"];

const HEIGHT = 220;

// ``series``: [{label, values, color?}]; ``xs``: epoch seconds. ``stack``: cumulative areas;
// else lines (``dash``ed where a series says so). Drawn again in place when its series are
// the same as last time (the app page redraws every poll); made anew otherwise.
// ``steps``: each value holds until the next (a count, not a rate). ``bars``: a bar per x
// (the middle of its stretch of time), the x axis spanning ``range`` [start, end].
export function chart(box, xs, series, {stack = false, unit = "", fmt = String,
  steps = false, bars = false, range = null} = {}) {
  const shown = stack ? stackUp(series) : series;
  const data = [xs, ...shown.map(s => s.values)];
  const key = JSON.stringify([stack, unit, range, shown.map(s => s.label)]);
  if (box.plot && box.plotKey === key) {
    box.plot.setData(data);
    return box.plot;
  }
  if (box.plot) box.plot.destroy();
  box.replaceChildren();
  const opts = {
    width: Math.max(320, box.clientWidth || 640), height: HEIGHT,
    scales: {x: range ? {time: true, range: () => range} : {time: true}},
    cursor: {drag: {x: false, y: false}},
    axes: [{}, {label: unit, size: 60}],
    series: [{}, ...shown.map((s, i) => {
      const color = s.color || COLORS[s.index ?? i % COLORS.length];
      return {label: s.label, stroke: color, width: stack ? 1 : 2, dash: s.dash,
        paths: paths(steps, bars),
        fill: stack ? color : undefined, points: {show: false},
        value: (u, v, si, idx) => idx == null ? "" : fmt((s.own || s.values)[idx])};
    })],
  };
  box.plot = new uPlot(opts, data, box);
  box.plotKey = key;
  return box.plot;
}

/* global uPlot */
function paths(steps, bars) {
  if (bars) return uPlot.paths.bars({size: [0.85, Infinity]});
  return steps ? uPlot.paths.stepped({align: 1}) : undefined;
}

// Running sums, the last (the total) first: drawn over by each smaller one in turn.
function stackUp(series) {
  let sum = null;
  const out = series.map((s, i) => {
    sum = s.values.map((v, j) => (sum ? sum[j] : 0) + (v || 0));
    return {label: s.label, values: sum, own: s.values, index: i % COLORS.length};
  });
  return out.reverse();
}

// Follows the window's width (a chart is drawn at a width in pixels).
export function followWidth(box) {
  window.addEventListener("resize", () => {
    if (box.plot) box.plot.setSize({width: Math.max(320, box.clientWidth), height: HEIGHT});
  });
}
