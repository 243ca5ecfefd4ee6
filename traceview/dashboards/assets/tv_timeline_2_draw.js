/* traceview canvas timeline, part 2 of 3: drawing (axis, lanes, raw items, stacked bins,
 * selection, flow arrow, search marks, range selection). Text goes on the canvas with fillText:
 * it is never parsed as markup. */
(function () {
  "use strict";
  var TV = (window.tvTimeline = window.tvTimeline || {});
  TV.GUTTER = 190; // label column, px
  TV.AXIS = 24; // time axis height, px
  var FONT = "11px system-ui, sans-serif";

  TV.x = function (t) {
    var v = TV.state.view, w = TV.plotWidth();
    return TV.GUTTER + ((t - v.t0) / (v.t1 - v.t0)) * w;
  };
  TV.t = function (x) {
    var v = TV.state.view, w = TV.plotWidth();
    return v.t0 + ((x - TV.GUTTER) / w) * (v.t1 - v.t0);
  };
  TV.plotWidth = function () { return Math.max(50, TV.canvas.clientWidth - TV.GUTTER); };

  TV.formatNs = function (ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) { return (ns / 1e9).toFixed(3) + " s"; }
    if (a >= 1e6) { return (ns / 1e6).toFixed(3) + " ms"; }
    if (a >= 1e3) { return (ns / 1e3).toFixed(3) + " µs"; }
    return ns.toFixed(0) + " ns";
  };

  function niceStep(span, n) {
    var raw = span / n, p = Math.pow(10, Math.floor(Math.log10(raw)));
    var m = raw / p;
    return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
  }

  function axis(ctx, w, h) {
    var v = TV.state.view, step = niceStep(v.t1 - v.t0, Math.max(2, w / 110));
    ctx.fillStyle = "#f9fafb";
    ctx.fillRect(0, 0, TV.GUTTER + w, TV.AXIS);
    ctx.strokeStyle = "#e5e7eb";
    ctx.fillStyle = "#374151";
    ctx.font = FONT;
    for (var t = Math.ceil(v.t0 / step) * step; t <= v.t1; t += step) {
      var x = Math.round(TV.x(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, TV.AXIS - 6);
      ctx.lineTo(x, h);
      ctx.stroke();
      ctx.fillText(TV.formatNs(t), x + 3, 14);
    }
  }

  function labels(ctx, lanes) {
    ctx.font = FONT;
    lanes.forEach(function (l) {
      var y = TV.AXIS + l.y;
      if (l.header) {
        ctx.fillStyle = "#1f2937";
        ctx.fillRect(0, y, TV.canvas.clientWidth, l.h);
        ctx.fillStyle = "#ffffff";
        ctx.font = "bold " + FONT;
        ctx.fillText(l.label, 6, y + 13);
        ctx.font = FONT;
        return;
      }
      ctx.fillStyle = l.kind === "host" ? "#f3f4f6" : "#ffffff";
      ctx.fillRect(0, y, TV.GUTTER - 2, l.h);
      ctx.fillStyle = "#111827";
      var indent = l.kind === "host" ? 6 + 6 * Math.min(l.depth, 8) : 6;
      if (l.kind !== "host" || l.depth === 0) { ctx.fillText(fit(ctx, l.label, TV.GUTTER - indent - 6), indent, y + l.h - 4); }
    });
  }

  function fit(ctx, text, width) {
    if (width < 8) { return ""; }
    if (ctx.measureText(text).width <= width) { return text; }
    var n = Math.max(0, Math.floor(width / 6.2) - 1);
    return n > 0 ? text.slice(0, n) + "…" : "";
  }

  function rawItems(ctx, d, laneInfo, w) {
    var raw = d.raw, colors = TV.state.meta.colors, marks = TV.state.search.names;
    var x0 = TV.GUTTER, x1 = TV.GUTTER + w;
    Object.keys(d.byLane).forEach(function (lane) {
      var l = laneInfo[lane];
      if (!l) { return; }
      var y = TV.AXIS + l.y, rows = d.byLane[lane];
      for (var k = 0; k < rows.length; k++) {
        var i = rows[k];
        var a = TV.x(raw.start[i]), b = TV.x(raw.start[i] + raw.dur[i]);
        if (b < x0 || a > x1) { continue; }
        a = Math.max(a, x0);
        b = Math.min(b, x1);
        var bw = Math.max(1, b - a);
        ctx.fillStyle = colors[d.classes[raw.cls[i]]] || "#999999";
        ctx.fillRect(a, y + 1, bw, l.h - 2);
        if (marks && marks[raw.name[i]]) {
          ctx.strokeStyle = "#facc15";
          ctx.lineWidth = 2;
          ctx.strokeRect(a, y + 1, bw, l.h - 2);
          ctx.lineWidth = 1;
        }
        if (bw > 28) {
          ctx.fillStyle = "#111827";
          ctx.fillText(fit(ctx, d.names[raw.name[i]], bw - 6), a + 3, y + l.h - 5);
        }
      }
    });
  }

  function stackedBins(ctx, d, laneInfo) {
    var b = d.bins, colors = TV.state.meta.colors, acc = {};
    for (var i = 0; i < b.lane.length; i++) {
      var l = laneInfo[b.lane[i]];
      if (!l) { continue; }
      var e0 = d.edges[b.bin[i]], e1 = d.edges[b.bin[i] + 1];
      var key = b.lane[i] * 1e6 + b.bin[i];
      var frac = Math.min(1, b.busy[i] / Math.max(1, e1 - e0));
      var below = acc[key] || 0;
      var hh = Math.min(frac, 1 - below) * (l.h - 2);
      acc[key] = below + frac;
      if (hh <= 0) { continue; }
      var xa = TV.x(e0), xb = TV.x(e1);
      if (xb < TV.GUTTER) { continue; }
      xa = Math.max(xa, TV.GUTTER);
      ctx.fillStyle = colors[d.classes[b.cls[i]]] || "#999999";
      ctx.fillRect(xa, TV.AXIS + l.y + l.h - 1 - below * (l.h - 2) - hh, Math.max(1, xb - xa), hh);
    }
  }

  function box(ctx, laneInfo, lane, start, dur, color, width) {
    var l = laneInfo[lane];
    if (!l) { return null; }
    var a = TV.x(start), b = Math.max(a + 2, TV.x(start + dur));
    ctx.strokeStyle = color;
    ctx.lineWidth = width;
    ctx.strokeRect(a - 1, TV.AXIS + l.y, b - a + 2, l.h);
    ctx.lineWidth = 1;
    return { x: (a + b) / 2, y: TV.AXIS + l.y, h: l.h };
  }

  function selection(ctx, laneInfo) {
    var sel = TV.state.selected;
    if (!sel) { return; }
    var p = box(ctx, laneInfo, sel.lane, sel.start, sel.dur, "#000000", 2);
    var f = sel.flow;
    if (!p || !f) { return; }
    var q = box(ctx, laneInfo, f.lane, f.start, f.dur, "#7c3aed", 2);
    if (!q) { return; }
    var ya = q.y > p.y ? p.y + p.h : p.y, yb = q.y > p.y ? q.y : q.y + q.h;
    ctx.strokeStyle = "#7c3aed";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(p.x, ya);
    ctx.bezierCurveTo(p.x, (ya + yb) / 2, q.x, (ya + yb) / 2, q.x, yb);
    ctx.stroke();
    var dir = yb > ya ? -1 : 1;
    ctx.beginPath();
    ctx.moveTo(q.x, yb);
    ctx.lineTo(q.x - 4, yb + 7 * dir);
    ctx.lineTo(q.x + 4, yb + 7 * dir);
    ctx.closePath();
    ctx.fillStyle = "#7c3aed";
    ctx.fill();
    ctx.lineWidth = 1;
  }

  function rangeBand(ctx, h) {
    var r = TV.state.range;
    if (!r) { return; }
    var a = Math.max(TV.GUTTER, TV.x(r.t0)), b = Math.min(TV.canvas.clientWidth, TV.x(r.t1));
    if (b <= a) { return; }
    ctx.fillStyle = "rgba(59,130,246,0.15)";
    ctx.fillRect(a, TV.AXIS, b - a, h - TV.AXIS);
    ctx.fillStyle = "#1d4ed8";
    ctx.fillRect(a, TV.AXIS, 1, h - TV.AXIS);
    ctx.fillRect(b - 1, TV.AXIS, 1, h - TV.AXIS);
    ctx.fillText(TV.formatNs(r.t1 - r.t0), a + 4, TV.AXIS + 12);
  }

  TV.draw = function () {
    var s = TV.state, c = TV.canvas;
    if (!s.meta || !s.view || !c) { return; }
    var lanesHeight = TV.layoutLanes();
    var cssW = c.parentElement.clientWidth, cssH = TV.AXIS + lanesHeight + 4;
    var ratio = window.devicePixelRatio || 1;
    if (c.width !== Math.round(cssW * ratio) || c.height !== Math.round(cssH * ratio)) {
      c.width = Math.round(cssW * ratio);
      c.height = Math.round(cssH * ratio);
      c.style.width = cssW + "px";
      c.style.height = cssH + "px";
    }
    var ctx = c.getContext("2d");
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    var w = TV.plotWidth();
    axis(ctx, w, cssH);
    if (s.data) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(TV.GUTTER, TV.AXIS, w, cssH - TV.AXIS);
      ctx.clip();
      ctx.font = FONT;
      stackedBins(ctx, s.data, s.laneAt);
      rawItems(ctx, s.data, s.laneAt, w);
      if (TV.drawOverlays) { TV.drawOverlays(ctx, s.laneAt, w); } // part 4
      selection(ctx, s.laneAt);
      rangeBand(ctx, cssH);
      ctx.restore();
    }
    labels(ctx, s.lanes);
    TV.draws += 1;
    c.dataset.draws = String(TV.draws);
    c.dataset.requests = String(TV.requests);
    c.dataset.view = Math.round(s.view.t0) + "," + Math.round(s.view.t1);
  };

  /* The lane drawn at canvas y (null on the axis, a rank header or between lanes). */
  TV.laneAtY = function (y) {
    var found = null;
    TV.state.lanes.forEach(function (l) {
      if (!l.header && y >= TV.AXIS + l.y && y < TV.AXIS + l.y + l.h) { found = l; }
    });
    return found;
  };

  /* The stacked-bin cell under (x, y) of a binned lane: {lane, bin, t0, t1, rows (of d.bins)}. */
  TV.hitBin = function (x, y) {
    var d = TV.state.data, l = TV.laneAtY(y);
    if (!d || x < TV.GUTTER || !l || !d.binned[l.lane]) { return null; }
    var t = TV.t(x), e = d.edges, lo = 0, hi = e.length - 1;
    if (!(hi > 0) || t < e[0] || t >= e[hi]) { return null; }
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (e[mid] <= t) { lo = mid; } else { hi = mid; } }
    return { lane: l.lane, bin: lo, t0: e[lo], t1: e[lo + 1], rows: d.cells[l.lane + ":" + lo] || [] };
  };

  /* The raw item under (x, y) in canvas px: the shortest one whose box contains x ± 2 px. */
  TV.hit = function (x, y) {
    var s = TV.state, d = s.data;
    if (!d || x < TV.GUTTER) { return null; }
    var l = TV.laneAtY(y), lane = l ? l.lane : null;
    if (lane === null || !d.byLane[lane]) { return null; }
    var best = null, rows = d.byLane[lane];
    for (var k = 0; k < rows.length; k++) {
      var i = rows[k], a = TV.x(d.raw.start[i]), b = TV.x(d.raw.start[i] + d.raw.dur[i]);
      if (x >= a - 2 && x <= b + 2 && (best === null || d.raw.dur[i] < d.raw.dur[best])) { best = i; }
    }
    return best === null ? null : { id: d.raw.id[best], row: best };
  };
})();
