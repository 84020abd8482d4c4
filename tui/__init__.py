"""kerneldiff explorer: a Textual app that renders core results (no analysis here).

`kerneldiff.tui.app.run_app` is the entry point; screens compose widgets, widgets render Comparison parts,
`kerneldiff.tui.views` turns those parts into table rows and detail text.
"""
