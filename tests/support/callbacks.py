"""Dash callbacks over HTTP: find a callback in /_dash-dependencies and write the body of a
/_dash-update-component request for it, as the browser does."""

from __future__ import annotations

import orjson


def dependency(client, output: str) -> dict:
    """The callback of the app behind the test `client` whose outputs include `output` ("id.property"),
    exactly: a second writer of the same property (`allow_duplicate`, "id.property@hash") is another."""
    deps = orjson.loads(client.get("/_dash-dependencies").data)
    (dep,) = [d for d in deps if output in d["output"].strip(".").split("...")]
    return dep


def outputs(dep: dict) -> list[dict]:
    """The `outputs` of a request for the callback `dep`: one {"id", "property"} an output."""
    return [{"id": o.split(".")[0], "property": o.split(".")[1]} for o in dep["output"].strip(".").split("...")]


def request(dep: dict, inputs: list[dict], changed: list[str], **extra) -> dict:
    """The JSON body of a /_dash-update-component request for the callback `dep` (`extra`: further
    keys, e.g. state=[])."""
    return {"output": dep["output"], "outputs": outputs(dep), "inputs": inputs, "changedPropIds": changed, **extra}


def layout_text(app) -> str:
    """A Dash app's whole layout as JSON text (ids, labels and data all searchable)."""
    import json

    from plotly.utils import PlotlyJSONEncoder

    return json.dumps(app.layout.to_plotly_json(), cls=PlotlyJSONEncoder)
