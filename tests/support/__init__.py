"""What several test modules share, written once:

- `tests.support.intervals`: the reference interval algebra (plain, slow, obviously right) that
  the vectorised analyses are compared with;
- `tests.support.kineto`: writing Kineto (torch.profiler) trace events and files;
- `tests.support.pipeline`: the 1F1B pipeline simulator and the profiles it writes;
- `tests.support.timeline`: device-task frames with the columns the timeline reads;
- `tests.support.callbacks`: Dash callback requests over HTTP (/_dash-update-component);
- `tests.support.serve`: `traceview serve` as a real process.
"""
