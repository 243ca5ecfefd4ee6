"""The canvas timeline of the dashboard, one family in one place:

- `model.py`: the view-model (lanes and their items, built once per Trace from the analyses);
- `api.py`: the JSON routes the browser asks (/api/timeline/meta, window, task, search, range,
  overlays), parameters parsed and bounded;
- `overlays.py`: traceview's analyses (collectives, bubbles, findings, memory) placed on the lanes;
- `view.py`: the Timeline page's mount point in the Dash app;
- the renderer: `../assets/tv_timeline_*.js` (served with the dashboard's assets).

The arithmetic is pure and lives with the analyses: `traceview.analysis.timeline`,
`timeline_tracks` and `timeline_overlays`.
"""
