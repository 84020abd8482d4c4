"""kerneldiff explorer: a Textual app that renders core results (no analysis here).

`kerneldiff.tui.app.run_app` is the entry point (`explore_runs` for two runs of rank traces): one App,
with a screen per kind of result; screens compose widgets, widgets render Comparison parts,
`kerneldiff.tui.views` turns those parts into table rows and detail text.
"""
