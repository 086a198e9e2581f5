"""Publish: the cookbook as a static MkDocs + Material site.

`pages` turns a Cookbook into the docs files (pure), `chart` draws Pareto charts as SVG (pure),
`site` writes the files, runs MkDocs and swaps the built site into place (I/O).
"""
