"""Presentation: the Dash app (`traceview serve`) and the HTML report, built from analysis frames.

Only this package (and the CLI's text output) imports plotly, Dash and rich.
"""
